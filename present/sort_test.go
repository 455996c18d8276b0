package present

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// randomLocks are n locks with many ties: few holders (some unknown), few deadlines and
// acquisition times (some unknown or without expiry), so that every order needs its key.
func randomLocks(n int, rng *rand.Rand) []*scanner.Lock {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	holders := []string{"", "api-1", "api-2", "worker"}
	locks := make([]*scanner.Lock, n)
	for i, k := range rng.Perm(n) { // keys are unique, in no order
		l := &scanner.Lock{Key: fmt.Sprintf("lock:%d", k), Node: holders[rng.IntN(len(holders))],
			FetchedAt: now, TTL: time.Duration(rng.IntN(5)) * time.Second, NoExpiry: rng.IntN(6) == 0}
		if rng.IntN(4) > 0 {
			l.AcquiredAt = now.Add(-time.Duration(rng.IntN(5)) * time.Minute)
		}
		locks[i] = l
	}
	return locks
}

// TestRankingFirstNIsSortAndCut: for every order, both directions and sizes around the run
// length, a Ranking with a limit keeps exactly the first rows of the full sort, and one
// without (sorted in runs and merged) gives the full sort.
func TestRankingFirstNIsSortAndCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 300, 2*runLen + 5} {
		locks := randomLocks(n, rng)
		limits := []int{0, 1, 10, n + 1}
		if n > runLen {
			limits = []int{0} // the merge of three runs
		}
		for _, s := range sorts {
			for _, desc := range []bool{false, true} {
				keys := map[*scanner.Lock]sortKey{}
				for _, l := range locks {
					keys[l] = keyOf(l, s)
				}
				full := slices.Clone(locks)
				slices.SortFunc(full, func(a, b *scanner.Lock) int { // the order, written out plainly
					c := keys[a].compare(keys[b])
					if desc {
						return -c
					}
					return c
				})
				for _, limit := range limits {
					r := NewRanking[*scanner.Lock](s, desc, limit)
					for _, l := range locks {
						r.Add(l, l)
					}
					want := full
					if limit > 0 && limit < n {
						want = full[:limit]
					}
					if got := slices.Collect(r.Sorted()); !sameKeys(got, want) {
						t.Fatalf("n %d %s desc %v limit %d: %d rows, not the sorted first ones", n, s, desc, limit, len(got))
					}
				}
			}
		}
	}
}

// sameKeys: the same rows in the same order.
func sameKeys(a, b []*scanner.Lock) bool {
	return slices.EqualFunc(a, b, func(x, y *scanner.Lock) bool { return x == y })
}

// TestRankingKeysWithoutTheSharedPrefix: keys that share less of a prefix than those before
// them, arriving after whole runs were sorted, and keys that end inside or just past the
// shared prefix, still come out in key order.
func TestRankingKeysWithoutTheSharedPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	locks := randomLocks(runLen+10, rng)
	for _, k := range []string{"lock:", "lock", "lock:\x00", "", "a", "lock:1\x00", "lock:10", "m"} {
		locks = append(locks, &scanner.Lock{Key: k})
	}
	locks = append(locks, randomLocks(runLen, rng)[runLen-300:]...) // keys met before: duplicates, ordered by key alone
	want := slices.Clone(locks)
	slices.SortStableFunc(want, func(a, b *scanner.Lock) int { return strings.Compare(a.Key, b.Key) })
	for _, limit := range []int{0, 50} {
		r := NewRanking[*scanner.Lock](SortByKey, false, limit)
		for _, l := range locks {
			r.Add(l, l)
		}
		got := slices.Collect(r.Sorted())
		w := want
		if limit > 0 {
			w = want[:limit]
		}
		if !slices.EqualFunc(got, w, func(x, y *scanner.Lock) bool { return x.Key == y.Key }) {
			t.Fatalf("limit %d: not in key order", limit)
		}
	}
}

// TestRankingByServerBreaksTiesOfOneKey: of independent servers the same key on two servers is
// two locks; ByServer orders them by server after everything else (the reverse order exactly
// reversed), whatever order they come in and with or without a limit, so that ls and the
// console list them the same way every time.
func TestRankingByServerBreaksTiesOfOneKey(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var locks []*scanner.Lock
	for _, key := range []string{"lock:b", "lock:a"} {
		for _, addr := range []string{"10.0.0.3:6379", "10.0.0.1:6379", "10.0.0.2:6379"} {
			locks = append(locks, &scanner.Lock{Key: key, Addr: addr, Node: "api", FetchedAt: now, TTL: time.Minute})
		}
	}
	want := []string{"lock:a@10.0.0.1:6379", "lock:a@10.0.0.2:6379", "lock:a@10.0.0.3:6379",
		"lock:b@10.0.0.1:6379", "lock:b@10.0.0.2:6379", "lock:b@10.0.0.3:6379"}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range sorts {
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{0, 4} {
				for range 20 {
					rng.Shuffle(len(locks), func(i, j int) { locks[i], locks[j] = locks[j], locks[i] })
					r := NewRanking[string](s, desc, limit).ByServer()
					for _, l := range locks {
						r.Add(l, l.Key+"@"+l.Addr)
					}
					exp := slices.Clone(want)
					if desc {
						slices.Reverse(exp)
					}
					if limit > 0 {
						exp = exp[:limit]
					}
					if got := slices.Collect(r.Sorted()); !slices.Equal(got, exp) {
						t.Fatalf("%s desc %v limit %d: %v, want %v", s, desc, limit, got, exp)
					}
				}
			}
		}
	}
}
