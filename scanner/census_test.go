package scanner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
)

// TestAssemblyEstimates: whatever the estimate (none, too low, right, far too high), and
// whether a batch was read before the array existed, the result holds every batch at its
// position, and an array far larger than the result is not kept.
func TestAssemblyEstimates(t *testing.T) {
	const total, batch = 1000, 100
	for _, estimate := range []int{0, 350, 1000, 1200, 5000} {
		t.Run(fmt.Sprint(estimate), func(t *testing.T) {
			var a assembly
			put := func(start int) {
				locks := a.buffer(start, batch)
				for i := range locks {
					locks[i] = Lock{Key: fmt.Sprintf("lock:%d", start+i)}
				}
				must(t, a.put(start, locks))
			}
			put(0) // read before the estimate came
			a.allocate(estimate)
			a.waitAllocated()
			for start := batch; start < total; start += batch {
				put(start)
			}
			got := a.result(total)
			if len(got) != total {
				t.Fatalf("%d records, want %d", len(got), total)
			}
			for i, l := range got {
				if l.Key != fmt.Sprintf("lock:%d", i) {
					t.Fatalf("record %d is %q", i, l.Key)
				}
			}
			if cap(got) > 2*total {
				t.Errorf("result keeps an array of %d records for %d", cap(got), total)
			}
		})
	}
}

// TestEstimateFromFirstPage: DBSIZE scaled by the first page's share of matching keys, with
// a margin, never above DBSIZE; exact when the first page ends the SCAN; summed over a
// cluster's masters once every one has reported.
func TestEstimateFromFirstPage(t *testing.T) {
	cases := []struct {
		name    string
		dbsizes []int64
		matched []int
		last    bool
		want    int
	}{
		{"dense", []int64{1_000_000}, []int{1000}, false, 1_000_000},
		{"sparse", []int64{1_000_000}, []int{10}, false, 1_000_000*10*5/4000 + 1000},
		{"one page", []int64{1_000_000}, []int{42}, true, 42},
		{"three masters", []int64{300, 300, 300}, []int{0, 300, 5}, true, 305},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := -1
			p := New(connect.Target{Mode: connect.Cluster}, Options{}).newPass(sink{expect: func(n int) { got = n }})
			p.unestimated = len(c.dbsizes)
			for i, d := range c.dbsizes {
				if got != -1 {
					t.Fatalf("estimate %d announced before every master reported", got)
				}
				p.noteFirstPage(walk{dbsize: d}, c.matched[i], c.last)
			}
			if got != c.want {
				t.Errorf("estimate %d, want %d", got, c.want)
			}
		})
	}
}

// TestCensusAmongOtherKeys: 500 locks among 20,000 other keys: every lock is found, and the
// result is not sized from DBSIZE alone (its array is at most twice the locks).
func TestCensusAmongOtherKeys(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	pipe := c.Pipeline()
	for i := range 20_000 {
		pipe.Set(ctx, fmt.Sprintf("cache:%d", i), "x", 0)
	}
	_, err := pipe.Exec(ctx)
	must(t, err)
	keys := loadLocks(t, c, "sparse", 500)
	census, err := New(target, Options{}).Census(ctx)
	must(t, err)
	m := byKey(t, census.Locks)
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("lock %s missing", k)
		}
	}
	if len(census.Locks) != 500 || cap(census.Locks) > 1000 {
		t.Errorf("%d locks in an array of %d", len(census.Locks), cap(census.Locks))
	}
}

// TestCensusEach: every key exactly once over the batches, fences read with them, wait queues
// left unknown; a repeated key in a later batch is dropped; an error from the consumer stops
// the census and comes back as it is, with no server taken for missing.
func TestCensusEach(t *testing.T) {
	_, c, target := startStandalone(t)
	keys := loadLocks(t, c, "each", 12_000)
	must(t, c.Set(testCtx(t), protocol.FenceKey(keys[7]), "42", 0).Err())
	must(t, c.ZAdd(testCtx(t), protocol.WaitQueueKey(keys[7]), redisZ(1, "w")).Err())
	s := New(target, Options{})
	seen := map[string]Lock{}
	batches := 0
	c0, err := s.CensusEach(testCtx(t), func(locks []Lock) error {
		batches++
		for _, l := range locks {
			if _, dup := seen[l.Key]; dup {
				t.Errorf("%s delivered twice", l.Key)
			}
			seen[l.Key] = l
		}
		return nil
	})
	must(t, err)
	if len(seen) != len(keys) || batches < 2 || len(c0.Missing) > 0 {
		t.Fatalf("%d keys in %d batches (missing %v), want %d in several", len(seen), batches, c0.Missing, len(keys))
	}
	if l := seen[keys[7]]; !l.HasFence || l.Fence != 42 || l.HasWaiters {
		t.Errorf("%s: fence %d (%v), waiters known %v: want fence 42, waiters unknown", l.Key, l.Fence, l.HasFence, l.HasWaiters)
	}

	repeats := newDigestSet(false)
	first := repeats.dropSeen([]Lock{{Key: "a"}, {Key: "b"}, {Key: "a"}})
	if len(first) != 2 || first[0].Key != "a" || first[1].Key != "b" {
		t.Errorf("first batch kept %v, want a and b", first)
	}
	if again := repeats.dropSeen([]Lock{{Key: "b"}, {Key: "c"}}); len(again) != 1 || again[0].Key != "c" {
		t.Errorf("second batch kept %v, want c only", again)
	}

	stop := errors.New("consumer left")
	_, err = s.CensusEach(testCtx(t), func([]Lock) error { return stop })
	if err != stop {
		t.Errorf("consumer's error came back as %v", err)
	}
}
