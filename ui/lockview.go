package ui

import (
	"slices"
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// viewQuery is what the visible list depends on besides the data: filter and order.
type viewQuery struct {
	filter matcher
	sort   present.Sort
	desc   bool
}

// expiringSoon is the remaining TTL under which a lock counts as "expiring soon".
const expiringSoon = 5 * time.Second

// lockCounts are the status bar's figures over the whole census (not only the filtered rows).
type lockCounts struct {
	total, soon, noExpiry, stuck int
}

// viewIndex is the filtered, sorted list of locks the table pages through. It is built once per
// data or query change (off the update loop for large sets) and only sliced per frame. It holds
// keys, not rows: the table looks each visible row up in the census, and a view that held rows
// would keep a whole older generation of them alive while passes replace them.
//
// A partial view (after a sort or filter change on a large census) holds only the first and
// the last rows of the new order, found in one pass, and counts the unranked rows between
// them, which wait for the full build.
type viewIndex struct {
	rows     []string // the whole order, or the first rows of a partial view
	unranked int
	tail     []string // a partial view's last rows
	counts   lockCounts
}

// len is the number of rows the filter lets through, ranked or not.
func (v viewIndex) len() int { return len(v.rows) + v.unranked + len(v.tail) }

// key is row i's key, "" while the row is not ranked yet.
func (v viewIndex) key(i int) string {
	switch {
	case i < len(v.rows):
		return v.rows[i]
	case i >= len(v.rows)+v.unranked && i < v.len():
		return v.tail[i-len(v.rows)-v.unranked]
	}
	return ""
}

// indexOf is where key is ranked in v (-1: not there or not ranked yet).
func (v viewIndex) indexOf(key string) int {
	if i := indexOfKey(v.rows, key); i >= 0 {
		return i
	}
	if i := indexOfKey(v.tail, key); i >= 0 {
		return len(v.rows) + v.unranked + i
	}
	return -1
}

// buildView filters and sorts a snapshot. It is a pure function: it runs inside a command.
func buildView(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration) viewIndex {
	rank := present.NewRanking[string](q.sort, q.desc, 0)
	matched, counts := rankRows(all, q, now, stuckAfter, rank)
	return viewIndex{rows: rankedKeys(rank, matched), counts: counts}
}

// buildPartialView is the first and the last limit rows of the view buildView makes, from one
// pass without a sort of the rest: the last ones are the first of the reverse order (the
// order is total: ties are broken by key).
func buildPartialView(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration, limit int) viewIndex {
	head := present.NewRanking[string](q.sort, q.desc, limit)
	tail := present.NewRanking[string](q.sort, !q.desc, limit)
	matched, counts := rankRows(all, q, now, stuckAfter, head, tail)
	v := viewIndex{rows: rankedKeys(head, min(matched, limit)), counts: counts}
	last := rankedKeys(tail, min(matched-len(v.rows), limit))
	slices.Reverse(last)
	v.tail = last
	v.unranked = matched - len(v.rows) - len(v.tail)
	return v
}

// rankedKeys collects the first n ranked keys into a slice of that size.
func rankedKeys(rank *present.Ranking[string], n int) []string {
	rows := make([]string, 0, n)
	for key := range rank.Sorted() {
		if len(rows) == n {
			break
		}
		rows = append(rows, key)
	}
	return rows
}

// rankRows counts the census and adds the keys of the rows the filter lets through to each
// ranking; the rows themselves are not needed after it.
func rankRows(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration, ranks ...*present.Ranking[string]) (matched int, counts lockCounts) {
	counts.total = len(all)
	var l scanner.Lock // each row's record in turn, for the checks that take one
	for _, r := range all {
		r.fill(&l)
		switch {
		case l.NoExpiry:
			counts.noExpiry++
		case l.RemainingAt(now) <= expiringSoon:
			counts.soon++
		}
		if present.Stuck(&l, now, stuckAfter) {
			counts.stuck++
		}
		if q.filter.match(l.Key, l.Node, l.Trace) {
			matched++
			for _, rank := range ranks {
				rank.Add(&l, r.key)
			}
		}
	}
	return matched, counts
}
