package ui

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// sortKey is a column the table can be sorted by.
type sortKey int

const (
	sortByKey sortKey = iota
	sortByTTL
	sortByAge
	sortByHolder
)

func (k sortKey) String() string {
	switch k {
	case sortByTTL:
		return "ttl"
	case sortByAge:
		return "age"
	case sortByHolder:
		return "holder"
	default:
		return "key"
	}
}

// viewQuery is what the visible list depends on besides the data: filter and order.
type viewQuery struct {
	filter matcher
	sort   sortKey
	desc   bool
}

// expiringSoon is the remaining TTL under which a lock counts as "expiring soon".
const expiringSoon = 5 * time.Second

// lockCounts are the status bar's figures over the whole census (not only the filtered rows).
type lockCounts struct {
	total, soon, noExpiry, stuck int
}

// viewIndex is the filtered, sorted list of locks the table pages through. It is built once per
// data or query change (off the update loop for large sets) and only sliced per frame.
type viewIndex struct {
	rows   []*scanner.Lock
	counts lockCounts
}

// buildView filters and sorts a snapshot. It is a pure function: it runs inside a command.
func buildView(all []*scanner.Lock, q viewQuery, now time.Time, stuckAfter time.Duration) viewIndex {
	var v viewIndex
	v.counts.total = len(all)
	rows := all
	if !q.filter.empty() {
		rows = make([]*scanner.Lock, 0, len(all)/4)
	}
	for _, l := range all {
		switch {
		case l.NoExpiry:
			v.counts.noExpiry++
		case l.RemainingAt(now) <= expiringSoon:
			v.counts.soon++
		}
		if isStuck(l, now, stuckAfter) {
			v.counts.stuck++
		}
		if !q.filter.empty() && q.filter.match(l.Key, l.Node, l.Trace) {
			rows = append(rows, l)
		}
	}
	sortRows(rows, q.sort, q.desc)
	v.rows = rows
	return v
}

// isStuck says the lock has been held longer than stuckAfter (when its age is known).
func isStuck(l *scanner.Lock, now time.Time, stuckAfter time.Duration) bool {
	return stuckAfter > 0 && !l.AcquiredAt.IsZero() && now.Sub(l.AcquiredAt) > stuckAfter
}

// sortEntry is one row's sort key, copied out of its record so the sort compares compact
// values instead of chasing a pointer to a large record on every comparison (a million
// records do not fit in the CPU caches).
type sortEntry struct {
	num  int64  // the numeric column: deadline or acquisition time in unix ns
	text string // the text column: the holder node
	key  string
	lock *scanner.Lock
}

// noValue sorts after every real time.
const noValue = math.MaxInt64

// sortRows orders rows in place by one column, then by key so the order is total and stable
// across rebuilds.
func sortRows(rows []*scanner.Lock, k sortKey, desc bool) {
	entries := make([]sortEntry, len(rows))
	for i, l := range rows {
		e := sortEntry{key: l.Key, lock: l}
		switch k {
		case sortByTTL:
			// By deadline, which does not move with time: the soonest to expire first,
			// locks that never expire last.
			e.num = noValue
			if !l.NoExpiry {
				e.num = l.FetchedAt.Add(l.TTL).UnixNano()
			}
		case sortByAge:
			// Oldest first; unknown acquisition times last.
			e.num = noValue
			if !l.AcquiredAt.IsZero() {
				e.num = l.AcquiredAt.UnixNano()
			}
		case sortByHolder:
			e.text = l.Node
		}
		entries[i] = e
	}
	slices.SortFunc(entries, func(a, b sortEntry) int {
		c := cmp.Compare(a.num, b.num)
		if c == 0 {
			c = strings.Compare(a.text, b.text)
		}
		if c == 0 {
			c = strings.Compare(a.key, b.key)
		}
		if desc {
			return -c
		}
		return c
	})
	for i, e := range entries {
		rows[i] = e.lock
	}
}
