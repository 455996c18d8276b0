package present

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/lockscope/lockscope/scanner"
)

// Sort is an order of the lock table, shared by `ls --sort` and the TUI's T A K H keys.
// Every order ends with the key (then, of independent servers, the server: Ranking.ByServer),
// so it is total: the same locks always come out the same way. A reversed order is the exact
// reverse, ties and unknowns included.
type Sort int

const (
	// SortByKey orders by key, bytewise.
	SortByKey Sort = iota
	// SortByTTL puts locks without expiry first (they never free themselves: the risk an
	// operator looks for), then the soonest expiry. It compares
	// deadlines (FetchedAt + TTL), which do not move with time, so the order of a live view
	// needs no re-sort as the TTLs count down; at one instant it is the order of the
	// remaining TTLs, and it is fair to locks read at different moments of a census.
	SortByTTL
	// SortByAge puts the oldest acquisition first and unknown ages last.
	SortByAge
	// SortByHolder orders by holder node, bytewise, with unknown holders last.
	SortByHolder
)

// sorts are the orders by name, as `ls --sort` takes them.
var sorts = []Sort{SortByKey, SortByTTL, SortByAge, SortByHolder}

func (s Sort) String() string {
	switch s {
	case SortByTTL:
		return "ttl"
	case SortByAge:
		return "age"
	case SortByHolder:
		return "holder"
	default:
		return "key"
	}
}

// ParseSort is the order named name (key, ttl, age or holder).
func ParseSort(name string) (Sort, error) {
	for _, s := range sorts {
		if s.String() == name {
			return s, nil
		}
	}
	names := make([]string, len(sorts))
	for i, s := range sorts {
		names[i] = s.String()
	}
	return SortByKey, fmt.Errorf("want one of %s", strings.Join(names, ", "))
}

// sortKey is a row's place in an order: its sort column and key, copied out of its record, so
// that rows are compared as compact values instead of through a pointer to a large record on
// every comparison (a million records do not fit in the CPU caches), and can be ordered
// without keeping their records at all (Ranking).
type sortKey struct {
	num  int64  // deadline or acquisition time in unix ns; by holder, 1 for an unknown holder
	head uint64 // the key's first bytes past the prefix all keys of its Ranking share (keyHead)
	text string // the holder node
	key  string
}

// never is the acquisition time of an unknown age, and the deadline of a semaphore without
// TTL: after every real time.
const never = math.MaxInt64

// noDeadline is the deadline of a lock without expiry: before every real deadline, so that
// the order by TTL shows first the locks that will not go away by themselves.
const noDeadline = math.MinInt64

// keyOf is l's place in order s.
func keyOf(l *scanner.Lock, s Sort) sortKey {
	k := sortKey{key: l.Key}
	switch s {
	case SortByTTL:
		switch {
		case l.NoExpiry && l.IsSemaphore() && !l.MaybeNaiveLock():
			k.num = never // no deadline, and no risk: its permits go, not the key (last)
		case l.NoExpiry:
			k.num = noDeadline
		default:
			k.num = l.FetchedAt.Add(l.TTL).UnixNano()
		}
	case SortByAge:
		k.num = never
		if !l.AcquiredAt.IsZero() {
			k.num = l.AcquiredAt.UnixNano()
		}
	case SortByHolder:
		k.text = l.Node
		if l.Node == "" {
			k.num = 1 // after every known holder
		}
	}
	return k
}

// compare orders a before b (negative), after (positive), or as the same row (0: same key).
func (a sortKey) compare(b sortKey) int {
	c := cmp.Compare(a.num, b.num)
	if c == 0 {
		c = strings.Compare(a.text, b.text)
	}
	if c == 0 {
		c = cmp.Compare(a.head, b.head)
	}
	if c == 0 {
		c = strings.Compare(a.key, b.key)
	}
	return c
}

// keyHead is the 8 bytes of key after its first skip bytes, big-endian, zero-padded. Between
// keys that share their first skip bytes, a smaller head is a smaller key (equal heads say
// nothing): most comparisons of a census's keys, which share a prefix such as "lock:", end on
// the heads kept in the rows, without reading the keys' bytes from wherever they are.
func keyHead(key string, skip int) uint64 {
	var h uint64
	for i := skip; i < skip+8; i++ {
		h <<= 8
		if i < len(key) {
			h |= uint64(key[i])
		}
	}
	return h
}

// SortLocks orders rows in place by s (reversed when desc), then by key.
func SortLocks(rows []*scanner.Lock, s Sort, desc bool) {
	r := NewRanking[*scanner.Lock](s, desc, 0)
	for _, l := range rows {
		r.Add(l, l)
	}
	i := 0
	for l := range r.Sorted() {
		rows[i] = l
		i++
	}
}

// Ranking puts rows in an order as they come, each with what the caller needs to show it (a
// pointer to its record, or the row already rendered). Without a limit it sorts them in runs
// as they come, so that most of the sorting is done while a census still waits for the
// server, and merges the runs at the end; with a limit it keeps only the first limit rows, a
// heap of the best so far, so that the first 10 of a million cost 10 rows of memory and no
// sort of the million.
type Ranking[T any] struct {
	by     Sort
	desc   bool
	limit  int           // 0: every row
	best   []ranked[T]   // with a limit: a heap, the worst row kept at the top (best[0])
	runs   [][]ranked[T] // without: sorted runs of runLen rows, but the last, still filling
	shared string        // a prefix of every key added: the rows' heads are their bytes past it
	// byServer: ties of one key are broken by server (ByServer).
	byServer bool
}

// maxShared bounds the shared prefix: each time it shrinks every row's head is computed anew.
const maxShared = 32

// runLen is the rows of a run: a million rows make 16 of them, merged at the end with about
// 4 comparisons a row instead of the 20 of a sort of the million.
const runLen = 1 << 16

type ranked[T any] struct {
	key sortKey
	row T
}

// NewRanking ranks rows by s (reversed when desc), keeping the first limit (0: all).
func NewRanking[T any](s Sort, desc bool, limit int) *Ranking[T] {
	return &Ranking[T]{by: s, desc: desc, limit: max(limit, 0)}
}

// ByServer breaks the ties of one key by the server it was read on, last: of independent
// servers, where the same key on two servers is two locks, they then come out the same way
// every time. Call it before Add.
func (r *Ranking[T]) ByServer() *Ranking[T] {
	r.byServer = true
	return r
}

func (r *Ranking[T]) compare(a, b sortKey) int {
	if r.desc {
		return b.compare(a)
	}
	return a.compare(b)
}

func (r *Ranking[T]) sort(rows []ranked[T]) {
	slices.SortFunc(rows, func(a, b ranked[T]) int { return r.compare(a.key, b.key) })
}

// Add ranks row, the row of l (l itself is not kept).
func (r *Ranking[T]) Add(l *scanner.Lock, row T) {
	key := keyOf(l, r.by)
	if r.byServer {
		// The key then the server, in the key's field: a NUL sorts before every other byte
		// (only keys holding one may sort apart from their order by key alone), and rows of
		// other orders pay nothing for it.
		key.key = l.Key + "\x00" + l.Addr
	}
	r.share(key.key)
	key.head = keyHead(key.key, len(r.shared))
	if r.limit == 0 {
		if len(r.runs) == 0 || len(r.runs[len(r.runs)-1]) == runLen {
			r.runs = append(r.runs, make([]ranked[T], 0, runLen)) // runs never grow: no copies of a million rows
		}
		last := &r.runs[len(r.runs)-1]
		if *last = append(*last, ranked[T]{key, row}); len(*last) == runLen {
			r.sort(*last)
		}
		return
	}
	if len(r.best) < r.limit {
		r.best = append(r.best, ranked[T]{key, row})
		r.up(len(r.best) - 1)
		return
	}
	if r.compare(key, r.best[0].key) < 0 { // better than the worst kept: it takes its place
		r.best[0] = ranked[T]{key, row}
		r.down(0)
	}
}

// share keeps r.shared a prefix of every key added, key included, and the rows' heads past it.
// The order of (head, key) is the order of the keys whatever the prefix, so sorted runs and
// the heap stay as they are.
func (r *Ranking[T]) share(key string) {
	if len(r.runs) == 0 && len(r.best) == 0 {
		r.shared = key[:min(len(key), maxShared)]
		return
	}
	if strings.HasPrefix(key, r.shared) {
		return
	}
	n := 0
	for n < len(r.shared) && n < len(key) && r.shared[n] == key[n] {
		n++
	}
	r.shared = r.shared[:n]
	rehead := func(rows []ranked[T]) {
		for i := range rows {
			rows[i].key.head = keyHead(rows[i].key.key, n)
		}
	}
	for _, run := range r.runs {
		rehead(run)
	}
	rehead(r.best)
}

func (r *Ranking[T]) worse(i, j int) bool { return r.compare(r.best[i].key, r.best[j].key) > 0 }

func (r *Ranking[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !r.worse(i, parent) {
			return
		}
		r.best[i], r.best[parent] = r.best[parent], r.best[i]
		i = parent
	}
}

func (r *Ranking[T]) down(i int) {
	for {
		worst := i
		for child := 2*i + 1; child <= 2*i+2 && child < len(r.best); child++ {
			if r.worse(child, worst) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		r.best[i], r.best[worst] = r.best[worst], r.best[i]
		i = worst
	}
}

// Sorted yields the rows kept, in order, and may be walked again. Add no rows after it.
func (r *Ranking[T]) Sorted() iter.Seq[T] {
	if r.limit > 0 {
		r.sort(r.best)
		return func(yield func(T) bool) {
			for i := range r.best {
				if !yield(r.best[i].row) {
					return
				}
			}
		}
	}
	if n := len(r.runs); n > 0 && len(r.runs[n-1]) < runLen {
		r.sort(r.runs[n-1]) // the last run, not full: sorted now (again on a second walk: it is)
	}
	return r.merge
}

// merge yields the rows of the sorted runs in order: a heap of the runs by their next row.
func (r *Ranking[T]) merge(yield func(T) bool) {
	next := make([]int, len(r.runs)) // each run's next row
	heap := make([]int, 0, len(r.runs))
	for i, run := range r.runs {
		if len(run) > 0 {
			heap = append(heap, i)
		}
	}
	before := func(a, b int) bool {
		return r.compare(r.runs[heap[a]][next[heap[a]]].key, r.runs[heap[b]][next[heap[b]]].key) < 0
	}
	siftDown := func(i int) {
		for {
			least := i
			for child := 2*i + 1; child <= 2*i+2 && child < len(heap); child++ {
				if before(child, least) {
					least = child
				}
			}
			if least == i {
				return
			}
			heap[i], heap[least] = heap[least], heap[i]
			i = least
		}
	}
	for i := len(heap)/2 - 1; i >= 0; i-- {
		siftDown(i)
	}
	for len(heap) > 0 {
		run := heap[0]
		if !yield(r.runs[run][next[run]].row) {
			return
		}
		if next[run]++; next[run] == len(r.runs[run]) {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		siftDown(0)
	}
}
