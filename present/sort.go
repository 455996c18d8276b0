package present

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockscope/lockscope/scanner"
)

// Sort is an order of the lock table, shared by `ls --sort` and the TUI's T A K H keys.
// Every order ends with the key, so it is total: the same locks always come out the same
// way. A reversed order is the exact reverse, ties and unknowns included.
type Sort int

const (
	// SortByKey orders by key, bytewise.
	SortByKey Sort = iota
	// SortByTTL puts the soonest expiry first and locks without expiry last. It compares
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
	num     int64  // the numeric column: deadline or acquisition time in unix ns
	unknown bool   // the column's value is unknown (no holder): after every known one
	text    string // the text column: the holder node
	key     string
}

// never is the deadline of a lock without expiry and the acquisition time of an unknown
// age: after every real time.
const never = math.MaxInt64

// keyOf is l's place in order s.
func keyOf(l *scanner.Lock, s Sort) sortKey {
	k := sortKey{key: l.Key}
	switch s {
	case SortByTTL:
		k.num = never
		if !l.NoExpiry {
			k.num = l.FetchedAt.Add(l.TTL).UnixNano()
		}
	case SortByAge:
		k.num = never
		if !l.AcquiredAt.IsZero() {
			k.num = l.AcquiredAt.UnixNano()
		}
	case SortByHolder:
		k.text, k.unknown = l.Node, l.Node == ""
	}
	return k
}

// compare orders a before b (negative), after (positive), or as the same row (0: same key).
func (a sortKey) compare(b sortKey) int {
	c := cmp.Compare(a.num, b.num)
	if c == 0 && a.unknown != b.unknown {
		c = -1
		if a.unknown {
			c = 1
		}
	}
	if c == 0 {
		c = strings.Compare(a.text, b.text)
	}
	if c == 0 {
		c = strings.Compare(a.key, b.key)
	}
	return c
}

// SortLocks orders rows in place by s (reversed when desc), then by key.
func SortLocks(rows []*scanner.Lock, s Sort, desc bool) {
	r := NewRanking[*scanner.Lock](s, desc, 0)
	for _, l := range rows {
		r.Add(l, l)
	}
	copy(rows, r.Rows())
}

// Ranking puts rows in an order as they come, each with what the caller needs to show it (a
// pointer to its record, or the row already rendered), and, with a limit, keeps only the
// first limit rows: a heap of the best so far, so that the first 10 of a million cost 10
// rows of memory and no sort of the million.
type Ranking[T any] struct {
	by    Sort
	desc  bool
	limit int // 0: every row
	rows  []ranked[T]
}

type ranked[T any] struct {
	key sortKey
	row T
}

// NewRanking ranks rows by s (reversed when desc), keeping the first limit (0: all).
func NewRanking[T any](s Sort, desc bool, limit int) *Ranking[T] {
	return &Ranking[T]{by: s, desc: desc, limit: max(limit, 0)}
}

func (r *Ranking[T]) compare(a, b sortKey) int {
	if r.desc {
		return b.compare(a)
	}
	return a.compare(b)
}

// Add ranks row, the row of l (l itself is not kept).
func (r *Ranking[T]) Add(l *scanner.Lock, row T) {
	key := keyOf(l, r.by)
	if r.limit == 0 {
		r.rows = append(r.rows, ranked[T]{key, row})
		return
	}
	if len(r.rows) < r.limit {
		r.rows = append(r.rows, ranked[T]{key, row})
		r.up(len(r.rows) - 1)
		return
	}
	if r.compare(key, r.rows[0].key) < 0 { // better than the worst kept: it takes its place
		r.rows[0] = ranked[T]{key, row}
		r.down(0)
	}
}

// With a limit, rows is a heap with the worst row kept at the top (rows[0]).
func (r *Ranking[T]) worse(i, j int) bool { return r.compare(r.rows[i].key, r.rows[j].key) > 0 }

func (r *Ranking[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !r.worse(i, parent) {
			return
		}
		r.rows[i], r.rows[parent] = r.rows[parent], r.rows[i]
		i = parent
	}
}

func (r *Ranking[T]) down(i int) {
	for {
		worst := i
		for child := 2*i + 1; child <= 2*i+2 && child < len(r.rows); child++ {
			if r.worse(child, worst) {
				worst = child
			}
		}
		if worst == i {
			return
		}
		r.rows[i], r.rows[worst] = r.rows[worst], r.rows[i]
		i = worst
	}
}

// Rows are the rows kept, in order. The Ranking is spent: call Rows once.
func (r *Ranking[T]) Rows() []T {
	slices.SortFunc(r.rows, func(a, b ranked[T]) int { return r.compare(a.key, b.key) })
	out := make([]T, len(r.rows))
	for i := range r.rows {
		out[i] = r.rows[i].row
		r.rows[i] = ranked[T]{} // the caller owns the rows now; the keys are garbage
	}
	r.rows = nil
	return out
}
