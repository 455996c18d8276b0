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
type viewIndex struct {
	rows   []string
	counts lockCounts
}

// buildView filters and sorts a snapshot. It is a pure function: it runs inside a command.
func buildView(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration) viewIndex {
	rank, counts := rankRows(all, q, now, stuckAfter)
	return viewIndex{rows: slices.Collect(rank.Sorted()), counts: counts}
}

// rankRows counts the census and ranks the keys of the rows the filter lets through; the
// rows themselves are not needed after it.
func rankRows(all []*lockRow, q viewQuery, now time.Time, stuckAfter time.Duration) (*present.Ranking[string], lockCounts) {
	var v viewIndex
	v.counts.total = len(all)
	rank := present.NewRanking[string](q.sort, q.desc, 0)
	var l scanner.Lock // each row's record in turn, for the checks that take one
	for _, r := range all {
		r.fill(&l)
		switch {
		case l.NoExpiry:
			v.counts.noExpiry++
		case l.RemainingAt(now) <= expiringSoon:
			v.counts.soon++
		}
		if present.Stuck(&l, now, stuckAfter) {
			v.counts.stuck++
		}
		if q.filter.match(l.Key, l.Node, l.Trace) {
			rank.Add(&l, r.key)
		}
	}
	return rank, v.counts
}
