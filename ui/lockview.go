package ui

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
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

// lockCounts are the status bar's figures over the whole census (not only the filtered rows):
// every key, the other keys among them (a list, a set: not locks), and of the locks those
// expiring soon, without expiry and stuck.
type lockCounts struct {
	total, other, soon, noExpiry, stuck int
}

func (c *lockCounts) add(o lockCounts) {
	c.total, c.other, c.soon, c.noExpiry, c.stuck = c.total+o.total, c.other+o.other, c.soon+o.soon, c.noExpiry+o.noExpiry, c.stuck+o.stuck
}

// text is the status bar's count: "21 locks", "21 locks +2 other" (keys of another type);
// filtered, how many rows it lets through of how many ("3/21 locks", "3/23 keys (21 locks +2
// other)").
func (c lockCounts) text(shown int, filtered bool) string {
	text := present.Count(c.total-c.other, "lock")
	if c.other > 0 {
		text += " +" + strconv.Itoa(c.other) + " other"
	}
	switch {
	case filtered && c.other > 0:
		return fmt.Sprintf("%d/%s (%s)", shown, present.Count(c.total, "key"), text)
	case filtered:
		return fmt.Sprintf("%d/%s", shown, present.Count(c.total, "lock"))
	}
	return text
}

// viewIndex is the filtered, sorted list of locks the table pages through. It is built once per
// data or query change (off the update loop for large sets) and only sliced per frame. It holds
// ids (lockID), not rows: the table looks each visible row up in the census, and a view that held rows
// would keep a whole older generation of them alive while passes replace them.
//
// A partial view (after a sort or filter change on a large census) holds only the first and
// the last rows of the new order, found in one pass, and counts the unranked rows between
// them, which wait for the full build.
type viewIndex struct {
	rows     []string // ids: the whole order, or the first rows of a partial view
	unranked int
	tail     []string // a partial view's last rows
	counts   lockCounts
}

// len is the number of rows the filter lets through, ranked or not.
func (v viewIndex) len() int { return len(v.rows) + v.unranked + len(v.tail) }

// key is row i's id, "" while the row is not ranked yet.
func (v viewIndex) key(i int) string {
	switch {
	case i < len(v.rows):
		return v.rows[i]
	case i >= len(v.rows)+v.unranked && i < v.len():
		return v.tail[i-len(v.rows)-v.unranked]
	}
	return ""
}

// indexOf is where the lock id key is ranked in v (-1: not there or not ranked yet).
func (v viewIndex) indexOf(key string) int {
	if i := indexOfKey(v.rows, key); i >= 0 {
		return i
	}
	if i := indexOfKey(v.tail, key); i >= 0 {
		return len(v.rows) + v.unranked + i
	}
	return -1
}

// viewBuild is what a view build measures and names rows with besides the rows and the
// query: the local time (TTLs count down on it), the servers' clocks (ages, and so stuck locks,
// are measured on them), the threshold of a stuck lock, and whether rows are told apart by
// server as well as key (independent servers).
type viewBuild struct {
	now        time.Time
	clocks     scanner.Clocks
	stuckAfter time.Duration
	byServer   bool
	groupOf    func(key string) string // a key's group, for the filter's group: words
}

// newRanking ranks rows in q's order (reversed when reverse), keeping the first limit (0:
// all); of independent servers (vb.byServer) the same key's rows are ordered by server.
func newRanking[T any](q viewQuery, reverse bool, limit int, vb viewBuild) *present.Ranking[T] {
	r := present.NewRanking[T](q.sort, q.desc != reverse, limit)
	if vb.byServer {
		r.ByServer()
	}
	return r
}

// buildView filters and sorts a snapshot. It is a pure function: it runs inside a command.
func buildView(all []*lockRow, q viewQuery, vb viewBuild) viewIndex {
	rank := newRanking[string](q, false, 0, vb)
	matched, counts := rankRows(all, q, vb, nil, rowIDs(vb.byServer), rank)
	return viewIndex{rows: rankedKeys(rank, matched), counts: counts}
}

func sameRow(r *lockRow) *lockRow { return r }

// buildPartialView is the first and the last limit rows of the view buildView makes, from one
// pass without a sort of the rest: the last ones are the first of the reverse order (the
// order is total: ties are broken by key, and server). The pass is split across the cores: each part
// keeps its own first and last rows, and the view's are the first and last of those.
func buildPartialView(all []*lockRow, q viewQuery, vb viewBuild, outdated func() bool, limit int) viewIndex {
	rowID := rowIDs(vb.byServer)
	type part struct {
		head, tail *present.Ranking[*lockRow]
		matched    int
		counts     lockCounts
	}
	parts := make([]part, min(runtime.GOMAXPROCS(0), max(len(all)/partialPartMin, 1)))
	var wg sync.WaitGroup
	for i := range parts {
		p := &parts[i]
		p.head = newRanking[*lockRow](q, false, limit, vb)
		p.tail = newRanking[*lockRow](q, true, limit, vb)
		wg.Go(func() {
			p.matched, p.counts = rankRows(all[i*len(all)/len(parts):(i+1)*len(all)/len(parts)], q, vb, outdated, sameRow, p.head, p.tail)
		})
	}
	wg.Wait()
	head := newRanking[string](q, false, limit, vb)
	tail := newRanking[string](q, true, limit, vb)
	var v viewIndex
	matched := 0
	var l scanner.Lock
	for _, p := range parts {
		matched += p.matched
		v.counts.add(p.counts)
		for r := range p.head.Sorted() {
			r.fill(&l)
			head.Add(&l, rowID(r))
		}
		for r := range p.tail.Sorted() {
			r.fill(&l)
			tail.Add(&l, rowID(r))
		}
	}
	v.rows = rankedKeys(head, min(matched, limit))
	last := rankedKeys(tail, min(matched-len(v.rows), limit))
	slices.Reverse(last)
	v.tail = last
	v.unranked = matched - len(v.rows) - len(v.tail)
	return v
}

// outdatedEvery is how many rows a build ranks between two looks at whether it is outdated.
const outdatedEvery = 1 << 14

// partialPartMin is the fewest rows worth a goroutine of a partial view's pass.
const partialPartMin = 50_000

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

// rankRows counts the census and adds the rows the filter lets through to each ranking, as
// rowOf makes them (the rows themselves are not needed after it when that is their key). It
// stops early, with partial figures, once outdated (nil: never) says nobody wants them.
func rankRows[T any](all []*lockRow, q viewQuery, vb viewBuild, outdated func() bool, rowOf func(*lockRow) T, ranks ...*present.Ranking[T]) (matched int, counts lockCounts) {
	counts.total = len(all)
	var l scanner.Lock // each row's record in turn, for the checks that take one
	filter := q.filter
	filter.groupOf = vb.groupOf
	for i, r := range all {
		if i%outdatedEvery == 0 && outdated != nil && outdated() {
			break
		}
		r.fill(&l)
		serverNow := vb.clocks.Now(&l, vb.now)
		switch {
		case l.Format == scanner.FormatNotALock: // no lock: its TTL, or lack of one, says nothing
			counts.other++
		case present.NeverFrees(&l):
			counts.noExpiry++
		case l.NoExpiry: // a semaphore: no TTL by design, its permits expire, not the key
		case l.RemainingAt(vb.now) <= expiringSoon:
			counts.soon++
		}
		if l.Format != scanner.FormatNotALock && present.Stuck(&l, serverNow, vb.stuckAfter) {
			counts.stuck++
		}
		if filter.match(&l, serverNow, vb.stuckAfter) {
			matched++
			for _, rank := range ranks {
				rank.Add(&l, rowOf(r))
			}
		}
	}
	return matched, counts
}
