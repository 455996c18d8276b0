package ui

import (
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
// A partial view (after a sort or filter change on a large census) holds only the first rows
// of the new order, found in one pass, and counts the unranked rows after them, which wait for
// the full build.
type viewIndex struct {
	rows     []string
	unranked int
	counts   lockCounts
}

// len is the number of rows the filter lets through, ranked or not.
func (v viewIndex) len() int { return len(v.rows) + v.unranked }

// key is row i's key, "" while the row is not ranked yet.
func (v viewIndex) key(i int) string {
	if i < len(v.rows) {
		return v.rows[i]
	}
	return ""
}

// buildView filters and sorts a snapshot. It is a pure function: it runs inside a command.
func buildView(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration) viewIndex {
	rank, matched, counts := rankRows(all, q, now, stuckAfter, 0)
	return viewIndex{rows: rankedKeys(rank, matched), counts: counts}
}

// buildPartialView is the first limit rows of the view buildView makes, from one pass
// without a sort of the rest.
func buildPartialView(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration, limit int) viewIndex {
	rank, matched, counts := rankRows(all, q, now, stuckAfter, limit)
	rows := rankedKeys(rank, min(matched, limit))
	return viewIndex{rows: rows, unranked: matched - len(rows), counts: counts}
}

// rankedKeys collects the ranked keys into a slice of the size known beforehand.
func rankedKeys(rank *present.Ranking[string], n int) []string {
	rows := make([]string, 0, n)
	for key := range rank.Sorted() {
		rows = append(rows, key)
	}
	return rows
}

// rankRows counts the census and ranks the keys of the rows the filter lets through (the
// first limit of them; 0: all); the rows themselves are not needed after it.
func rankRows(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration, limit int) (rank *present.Ranking[string], matched int, counts lockCounts) {
	counts.total = len(all)
	rank = present.NewRanking[string](q.sort, q.desc, limit)
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
			rank.Add(&l, r.key)
		}
	}
	return rank, matched, counts
}
