package ui

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// partialCensus is a census with ties in every sort column, locks without expiry and
// without a known holder or age, so that the order falls back on its later keys.
func partialCensus(n int) []scanner.Lock {
	locks := millionLocks(n)
	for i := range locks {
		switch i % 7 {
		case 0:
			locks[i].NoExpiry, locks[i].TTL = true, 0
		case 1:
			locks[i].Node, locks[i].AcquiredAt = "", time.Time{}
		}
	}
	return locks
}

// TestPartialViewIsTheFullViewsEnds: the rows a partial view shows are exactly the first and
// the last rows of the full index, for every order, both directions, with and without a
// filter, and it counts the rest.
func TestPartialViewIsTheFullViewsEnds(t *testing.T) {
	set := newLockSet(false)
	set.apply(partialCensus(3000), 1)
	for _, filter := range []string{"", "api-4"} {
		for _, sort := range []present.Sort{present.SortByKey, present.SortByTTL, present.SortByAge, present.SortByHolder} {
			for _, desc := range []bool{false, true} {
				q := viewQuery{filter: newMatcher(filter), sort: sort, desc: desc}
				full := buildView(set.snapshot(), q, viewBuild{now: t0, stuckAfter: time.Hour})
				for _, limit := range []int{1, 37, len(full.rows), len(full.rows) + 5} {
					part := buildPartialView(set.snapshot(), q, viewBuild{now: t0, stuckAfter: time.Hour}, nil, limit)
					if part.len() != len(full.rows) || part.counts != full.counts {
						t.Fatalf("filter %q, %v desc=%v, limit %d: %d rows, want %d", filter, sort, desc, limit, part.len(), len(full.rows))
					}
					for i, key := range full.rows {
						ranked := i < limit || i >= len(full.rows)-limit
						if got := part.key(i); got != key && (ranked || got != "") {
							t.Fatalf("filter %q, %v desc=%v, limit %d: row %d is %q, want %q (ranked: %v)", filter, sort, desc, limit, i, got, key, ranked)
						}
					}
				}
			}
		}
	}
}

// largeModel is a model whose every view build runs as a command, as on a large census.
func largeModel(t *testing.T, n, height int) *Model {
	t.Helper()
	m, _ := newTestModel(t, 120, height)
	m.syncLimit = 0
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: partialCensus(n)})
	return m
}

// splitQueryCmd runs a sort or filter key's command and returns the partial view's message
// and the full build's (the commands of its sequence, in order).
func splitQueryCmd(t *testing.T, cmd tea.Cmd) (viewPartialMsg, viewBuiltMsg) {
	t.Helper()
	cmds, ok := subCmds(cmd())
	if !ok || len(cmds) != 2 {
		t.Fatalf("want a partial view then a build, got %d commands", len(cmds))
	}
	part, ok := cmds[0]().(viewPartialMsg)
	if !ok {
		t.Fatal("the first command is not the partial view")
	}
	return part, findViewBuilt(cmds[1])
}

// TestSortShowsPartialThenFull: a sort key on a large census shows the new order's first
// rows from the partial view, paging past them shows "sorting…" instead of rows of another
// order, and the full build then fills every page.
func TestSortShowsPartialThenFull(t *testing.T) {
	m := largeModel(t, 2000, 20)
	sel := m.table.selKey
	part, full := splitQueryCmd(t, typeKeys(m, "T"))
	m.Update(part)
	if m.view.unranked == 0 || len(m.view.rows) == 0 || !slices.Equal(m.view.rows, full.index.rows[:len(m.view.rows)]) {
		t.Fatalf("partial view not installed: %d rows, %d unranked", len(m.view.rows), m.view.unranked)
	}
	if at := slices.Index(full.index.rows, sel); m.table.selKey != sel || m.table.cursor != min(at, len(m.view.rows)) {
		t.Fatalf("selection %q at %d, want %q at %d of the new order (%d ranked)", m.table.selKey, m.table.cursor, sel, at, len(m.view.rows))
	}
	typeKeys(m, "g")
	shown := screen(m)
	mustContain(t, shown, full.index.rows[0])
	mustNotContain(t, shown, "sorting…")
	typeKeys(m, "G")
	mustContain(t, screen(m), full.index.rows[len(full.index.rows)-1])
	typeKeys(m, "g")
	for range 10 {
		typeKeys(m, "space")
	}
	if m.table.cursor < len(m.view.rows) || m.table.cursor >= len(m.view.rows)+m.view.unranked {
		t.Fatalf("paging went to row %d, not past the %d ranked first rows", m.table.cursor, len(m.view.rows))
	}
	want := full.index.rows[m.table.cursor]
	shown = screen(m)
	mustContain(t, shown, "sorting…")
	if strings.Count(shown, "lock:order:") != 0 {
		t.Fatalf("rows shown between the partial view's ends:\n%s", shown)
	}
	m.Update(full)
	shown = screen(m)
	mustContain(t, shown, want)
	mustNotContain(t, shown, "sorting…")
}

// TestStalePartialViewDropped: a partial view for a query the user has already changed is
// not shown, nor one that arrives after its full build.
func TestStalePartialViewDropped(t *testing.T) {
	m := largeModel(t, 2000, 20)
	stale, _ := splitQueryCmd(t, typeKeys(m, "T"))
	before := visibleKeys(m)
	typeKeys(m, "H")
	m.Update(stale)
	if !slices.Equal(visibleKeys(m), before) || m.view.unranked != 0 {
		t.Fatalf("a stale partial view was installed: %d rows, %d unranked", len(m.view.rows), m.view.unranked)
	}
	m.building = false // the build of the first key is dropped by its generation (TestStaleViewBuildDropped)
	part, full := splitQueryCmd(t, typeKeys(m, "A"))
	m.Update(full)
	m.Update(part)
	if m.view.unranked != 0 || !slices.Equal(m.view.rows, full.index.rows) {
		t.Fatalf("a partial view replaced its full build: %d rows, %d unranked", len(m.view.rows), m.view.unranked)
	}
}

// TestPartialViewPlacesSelectionAtTheEnd: reversing the order moves the selected first lock to
// the last row, which the partial view already ranks: the cursor follows it there at once.
func TestPartialViewPlacesSelectionAtTheEnd(t *testing.T) {
	m := largeModel(t, 2000, 20)
	typeKeys(m, "g")
	first := m.table.selKey
	part, _ := splitQueryCmd(t, typeKeys(m, "K")) // by key, reversed
	m.Update(part)
	if m.table.selKey != first || m.table.cursor != m.view.len()-1 {
		t.Fatalf("selection %q on row %d of %d, want %q on the last", m.table.selKey, m.table.cursor, m.view.len(), first)
	}
	mustContain(t, screen(m), first)
}

// TestOutdatedBuildStopsEarly: a build or partial view for a query the user has already
// replaced stops instead of ranking the whole census (its message is dropped by generation).
func TestOutdatedBuildStopsEarly(t *testing.T) {
	set := newLockSet(false)
	set.apply(partialCensus(3*outdatedEvery), 1)
	latest := new(atomic.Uint64)
	latest.Store(2)
	q := viewQuery{sort: present.SortByTTL}
	for gen, want := range map[uint64]int{1: 0, 2: 3 * outdatedEvery} {
		built := buildViewCmd(set.snapshot(), q, gen, latest, viewBuild{now: t0, stuckAfter: time.Hour}, "")().(viewBuiltMsg)
		part := partialViewCmd(set.snapshot(), q, gen, latest, viewBuild{now: t0, stuckAfter: time.Hour}, 10)().(viewPartialMsg)
		if len(built.index.rows) != want || part.index.len() != want {
			t.Fatalf("generation %d of 2: the build ranked %d rows, the partial view counted %d, want %d", gen, len(built.index.rows), part.index.len(), want)
		}
	}
}
