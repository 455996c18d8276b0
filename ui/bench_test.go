package ui

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// millionLocks is a census of n lockscope locks read at t0, with varied holders and TTLs.
func millionLocks(n int) []scanner.Lock {
	locks := make([]scanner.Lock, n)
	for i := range locks {
		node := fmt.Sprintf("api-%d", i%97)
		acquired := t0.Add(-time.Duration(i%600) * time.Second)
		locks[i] = scanner.Lock{
			Key: fmt.Sprintf("lock:order:%07d", i), Format: scanner.FormatLockscope, Type: "string",
			Node: node, Trace: fmt.Sprintf("req-%d", i%1013), AcquiredAt: acquired,
			TTL: time.Duration(1+i%120) * time.Second, FetchedAt: t0, Fence: int64(i), HasFence: true,
			Value: fmt.Sprintf("%s:req-%d:%d:%016x", node, i%1013, acquired.UnixMilli(), i),
		}
	}
	return locks
}

// loadedModel is a 120x40 model holding n locks, its view index built.
func loadedModel(b *testing.B, n int, q viewQuery) *Model {
	b.Helper()
	clk := &fakeClock{t: t0}
	m := newModel(context.Background(), Options{Target: testTarget, Now: clk.now}, nil, nil)
	m.Update(tea.ColorProfileMsg{Profile: colorprofile.ANSI256})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.locks.apply(millionLocks(n), 1)
	m.query = q
	m.installView(buildView(m.locks.snapshot(), q, viewBuild{now: t0, stuckAfter: m.stuckAfter}), -1)
	m.table.moveTo(n/2, m.view) // somewhere in the middle
	return m
}

// BenchmarkViewMillionLocks is one frame with 1,000,000 locks loaded (target: under 10 ms).
func BenchmarkViewMillionLocks(b *testing.B) {
	m := loadedModel(b, 1_000_000, viewQuery{sort: present.SortByTTL})
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkKeyPressMillionLocks is one key press through Update plus the frame after it, for
// each kind of key: moving, paging, jumping to the end, a sort (each press reverses it; the
// rebuild it asks for runs in a command, as in the program), the filter prompt, typing in it,
// and the detail pane.
func BenchmarkKeyPressMillionLocks(b *testing.B) {
	for _, bc := range []struct {
		name string
		keys []string // pressed in turn, one per iteration (keyMsgs names)
		pre  string   // pressed once before timing
	}{
		{name: "down", keys: []string{"down"}},
		{name: "pgdown", keys: []string{"space"}},
		{name: "end-home", keys: []string{"G", "g"}},
		{name: "sort", keys: []string{"T", "H", "A", "K"}},
		{name: "filter-typing", pre: "/", keys: []string{"4", "backspace"}},
		{name: "detail", keys: []string{"enter"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := loadedModel(b, 1_000_000, viewQuery{})
			if bc.pre != "" {
				typeKeys(m, bc.pre)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				typeKeys(m, bc.keys[i%len(bc.keys)])
				_ = m.View()
				i++
			}
		})
	}
}

// BenchmarkSortRowsMillionLocks is a sort key (T, H, A, K in turn) on 1,000,000 locks until
// its rows are on screen: the key through Update, the partial view's pass, the frame. "full"
// also runs the full build to completion; "full-memlimit" does so under the soft memory limit
// the console sets (cli/memlimit.go: the live heap plus a quarter), which a build that
// allocates past it makes the collector chase.
func BenchmarkSortRowsMillionLocks(b *testing.B) {
	for _, bc := range []struct {
		name           string
		full, memLimit bool
	}{{"partial", false, false}, {"full", true, false}, {"full-memlimit", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			m := loadedModel(b, 1_000_000, viewQuery{})
			m.syncLimit = 0
			if bc.memLimit {
				live := int64(liveHeap())
				defer debug.SetMemoryLimit(debug.SetMemoryLimit(live + max(live/4, 64<<20)))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				cmds, _ := subCmds(typeKeys(m, []string{"T", "H", "A", "K"}[i%4])())
				m.Update(cmds[0]())
				_ = m.View()
				if bc.full {
					m.Update(cmds[1]())
					_ = m.View()
				} else {
					m.building = false // the full build is not run
				}
				i++
			}
		})
	}
}

// BenchmarkBuildViewMillionLocks is the off-loop index rebuild (filter + sort) of 1,000,000
// locks, which runs in a command after a data or query change.
func BenchmarkBuildViewMillionLocks(b *testing.B) {
	locks := millionLocks(1_000_000)
	set := newLockSet(false)
	set.apply(locks, 1)
	for _, bc := range []struct {
		name string
		q    viewQuery
	}{
		{"sort-ttl", viewQuery{sort: present.SortByTTL}},
		{"filter-substring", viewQuery{filter: newMatcher("api-42"), sort: present.SortByKey}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = buildView(set.snapshot(), bc.q, viewBuild{now: t0, stuckAfter: present.DefaultStuckAfter})
			}
		})
	}
}

// BenchmarkMemoryMillionLocks is the heap the console keeps for 1,000,000 locks, after one
// scan pass and after a second pass that replaced every record, the view index built each
// time. Records arrive as the scanner's Watch delivers them: batches of 5,000 in arrays of
// their own, with strings of their own.
func BenchmarkMemoryMillionLocks(b *testing.B) {
	const n, batchLen = 1_000_000, 5000
	var afterOne, afterTwo uint64
	for b.Loop() {
		m := loadedModel(b, 0, viewQuery{sort: present.SortByTTL})
		pass := func(gen uint64) {
			all := millionLocks(n)
			for start := 0; start < n; start += batchLen {
				m.locks.apply(slices.Clone(all[start:start+batchLen]), gen)
			}
			m.locks.prune(gen, nil)
			m.installView(buildView(m.locks.snapshot(), m.query, viewBuild{now: t0, stuckAfter: m.stuckAfter}), -1)
		}
		pass(1)
		afterOne = max(afterOne, liveHeap())
		pass(2)
		afterTwo = max(afterTwo, liveHeap())
		if m.locks.len() != n || len(m.view.rows) != n {
			b.Fatalf("%d locks, %d rows", m.locks.len(), len(m.view.rows))
		}
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64(afterOne)/(1<<20), "live-MB-1-pass")
	b.ReportMetric(float64(afterTwo)/(1<<20), "live-MB-2-passes")
	b.ReportMetric(float64(afterTwo)/n, "B/lock")
}

// liveHeap is the heap's live objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkFenceJumpsMillionLocks is what the fence-jump rule adds to a batch of 5,000
// re-read records on a census of 1,000,000 locks: outside a switch's window (the token going
// down is checked), and inside one with every token changed (the worst case: each record
// remembered and marked).
func BenchmarkFenceJumpsMillionLocks(b *testing.B) {
	const n, batchLen = 1_000_000, 5000
	m := loadedModel(b, n, viewQuery{sort: present.SortByTTL})
	batch := millionLocks(batchLen)
	for i := range batch {
		batch[i].Fence += n // new tokens, higher: nothing to mark outside a window
	}
	b.Run("outside", func(b *testing.B) {
		for b.Loop() {
			m.observeTokens(batch)
		}
	})
	b.Run("window", func(b *testing.B) {
		for b.Loop() {
			m.fence, m.jumpLines = fenceJumps{}, 0
			m.fence.switched("a", "b", 1)
			m.observeTokens(batch)
		}
	})
}

// BenchmarkFenceJumpWindowMemory is the heap the rule holds inside a switch's window after
// every token of a census of 1,000,000 locks changed (the worst case: each lock remembered and
// marked), per lock.
func BenchmarkFenceJumpWindowMemory(b *testing.B) {
	const n = 1_000_000
	m := loadedModel(b, n, viewQuery{sort: present.SortByTTL})
	all := millionLocks(n)
	for i := range all {
		all[i].Fence += n
	}
	var held uint64
	for b.Loop() {
		m.fence, m.jumpLines = fenceJumps{}, 0
		before := liveHeap()
		m.fence.switched("a", "b", 1)
		m.observeTokens(all)
		held = max(held, liveHeap()-before)
		if len(m.fence.atSwitch) != n || len(m.fence.marks) != n {
			b.Fatalf("%d remembered, %d marked", len(m.fence.atSwitch), len(m.fence.marks))
		}
	}
	b.ReportMetric(float64(held)/(1<<20), "window-MB")
	b.ReportMetric(float64(held)/n, "B/lock")
}

// BenchmarkCensusPassHistory is a whole scan pass of 1,000,000 locks through Update (batches
// of 5,000, then the pass's end), with no lock's history recorded ("untracked": the console
// before anyone looks at a lock; the history costs one length check) and with the cap of
// keys tracked, spread over the census ("tracked-cap": each of their records observed).
func BenchmarkCensusPassHistory(b *testing.B) {
	const n, batchLen = 1_000_000, 5000
	all := millionLocks(n)
	for _, bc := range []struct {
		name    string
		tracked int
	}{{"untracked", 0}, {"tracked-cap", historyKeys}} {
		b.Run(bc.name, func(b *testing.B) {
			m := loadedModel(b, n, viewQuery{sort: present.SortByTTL})
			for i := range bc.tracked {
				m.history.track(all[i*(n/bc.tracked)].Key, t0)
			}
			gen := uint64(1)
			b.ReportAllocs()
			for b.Loop() {
				gen++
				for start := 0; start < n; start += batchLen {
					m.onScan(scanner.Update{Kind: scanner.UpdateBatch, Gen: gen, Locks: all[start : start+batchLen]})
				}
				m.onScan(scanner.Update{Kind: scanner.UpdatePassDone, Gen: gen, Census: scanner.Census{FetchedAt: t0}})
				m.building = false // the view build the pass asked for is not run
			}
			if len(m.history.keys) != bc.tracked {
				b.Fatalf("%d keys tracked, want %d", len(m.history.keys), bc.tracked)
			}
		})
	}
}

// BenchmarkCensusBatchHistory is one batch of 5,000 re-read records on a census of 1,000,000
// locks: what the console did with it before the history ("census": the fence-jump check and
// the set's update) and what the history adds with the cap of keys tracked ("history").
func BenchmarkCensusBatchHistory(b *testing.B) {
	const n, batchLen = 1_000_000, 5000
	m := loadedModel(b, n, viewQuery{sort: present.SortByTTL})
	all := millionLocks(n)
	for i := range historyKeys {
		m.history.track(all[i*(n/historyKeys)].Key, t0)
	}
	batch := all[n/2 : n/2+batchLen] // holds one tracked key or two
	b.Run("census", func(b *testing.B) {
		for b.Loop() {
			m.observeTokens(batch)
			m.locks.apply(batch, 2)
		}
	})
	b.Run("history", func(b *testing.B) {
		for b.Loop() {
			m.recordCensus(batch)
		}
	})
}

// BenchmarkContentionMillionLocks is what the contention overview's aggregator adds to the
// console's work on a batch of 5,000 records, on a census of 1,000,000 locks, side by side:
// "console" is the census path of a batch (fence-jump check, the pictures' history, the
// set's update) without the aggregator (the set's watch hook unset); the others are the
// aggregator's own work on the same 5,000 row changes, as the hook gets them. "reread": every
// value as before (the steady state of a following console); "newholders": every lock has
// another holder (every record a hand-off: the worst case), with the default rule and with a
// regex rule.
func BenchmarkContentionMillionLocks(b *testing.B) {
	const n, batchLen = 1_000_000, 5000
	regex, err := keygroup.Parse(`regex:^lock:([a-z]+):`)
	if err != nil {
		b.Fatal(err)
	}
	all := millionLocks(n)
	same := all[n/2 : n/2+batchLen]
	other := slices.Clone(same)
	for i := range other {
		v := other[i].Value
		other[i].Value = v[:len(v)-16] + fmt.Sprintf("%016x", n+i) // another acquisition's random part
	}
	m := loadedModel(b, 0, viewQuery{sort: present.SortByTTL})
	m.locks.apply(all, 1)
	m.locks.watch = nil
	b.Run("console", func(b *testing.B) {
		for b.Loop() {
			m.observeTokens(same)
			m.recordCensus(same)
			m.locks.apply(same, 2)
		}
	})
	// The row changes of the batch: as first read, read again, and with other holders.
	rowsOf := func(set *lockSet) []*lockRow { return slices.Clone(set.rows) }
	set := newLockSet(false)
	set.apply(same, 1)
	first := rowsOf(&set)
	set.apply(same, 2)
	again := rowsOf(&set)
	set.apply(other, 3)
	moved := rowsOf(&set)
	for _, bc := range []struct {
		name     string
		from, to []*lockRow
		rule     *keygroup.Rule
	}{
		{"reread/contention", first, again, nil},
		{"newholders/contention", first, moved, nil},
		{"newholders/contention-regex", first, moved, &regex},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newContention(keygroup.Default, false, func() time.Time { return t0 })
			if bc.rule != nil {
				c.rule = *bc.rule
			}
			for _, r := range bc.from {
				c.observeRow(nil, r)
			}
			for i := 0; b.Loop(); i++ {
				from, to := bc.from, bc.to
				if i%2 == 1 { // back and forth: each change a hand-off again
					from, to = to, from
				}
				for j := range to {
					c.observeRow(from[j], to[j])
				}
			}
			if moves := bc.to[0].value != bc.from[0].value; moves != (handoffsIn(c) > 0) {
				b.Fatalf("%d hand-offs counted; holders changed: %v", handoffsIn(c), moves)
			}
		})
	}
}

// handoffsIn is every hand-off in c's window.
func handoffsIn(c *contention) int {
	n := 0
	for _, g := range c.groups {
		for _, h := range g.handoffs {
			n += int(h)
		}
	}
	return n
}

// BenchmarkOverviewFrame is one frame of the contention overview with 1,000,000 locks loaded
// in 101 groups (100 and _other), every bucket of the window holding hand-offs.
func BenchmarkOverviewFrame(b *testing.B) {
	const n = 1_000_000
	m := loadedModel(b, 0, viewQuery{sort: present.SortByTTL})
	m.watchContention()
	all := millionLocks(n)
	for i := range all {
		all[i].Key = fmt.Sprintf("lock:g%d:%d", i%150, i)
	}
	m.locks.apply(all, 1)
	for _, g := range m.contention.groups {
		for i := range g.handoffs {
			g.handoffs[i], g.waiters[i] = uint32(i), uint32(i%7)
		}
	}
	m.contention.since = t0.Add(-contentionWindow)
	typeKeys(m, "o")
	if !strings.Contains(screen(m), "_other") {
		b.Fatalf("no _other on screen:\n%s", screen(m))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkContentionMemory is the heap the aggregator holds at its bounds: the live heap of a
// console fed 1,000,000 locks in 150 would-be groups (100 kept, the rest in _other), then
// 100,000 of them gone from the census and 100,000 keys locklib's events spoke of (more than
// it remembers), with the aggregator and without it (the same records, the hook unset).
func BenchmarkContentionMemory(b *testing.B) {
	const n = 1_000_000
	all := millionLocks(n)
	for i := range all {
		all[i].Key = fmt.Sprintf("lock:g%d:%d", i%150, i)
	}
	gone := make([]scanner.Lock, 100_000)
	for i := range gone {
		gone[i] = scanner.Lock{Key: all[i].Key, Gone: true}
	}
	events := make([]protocol.Event, 100_000)
	for i := range events {
		events[i] = protocol.Event{Type: string(locklib.EventAcquired), Key: fmt.Sprintf("lock:e%d:1", i), Value: all[i].Value}
	}
	heapOf := func(on bool) uint64 {
		m := loadedModel(b, 0, viewQuery{sort: present.SortByTTL})
		if !on {
			m.locks.watch = nil
		}
		m.locks.apply(all, 1)
		m.locks.apply(gone, 2)
		if on {
			for _, ev := range events {
				m.contention.observeEvent(ev, m.censusHolder)
			}
			if len(m.contention.groups) != maxGroups+1 || len(m.contention.remembered) != maxRememberedKeys {
				b.Fatalf("%d groups, %d remembered", len(m.contention.groups), len(m.contention.remembered))
			}
		}
		h := liveHeap()
		runtime.KeepAlive(m)
		return h
	}
	var without, with uint64
	for b.Loop() {
		without, with = heapOf(false), heapOf(true)
	}
	b.ReportMetric(float64(int64(with)-int64(without))/(1<<20), "aggregator-MB")
	b.ReportMetric(float64(without)/(1<<20), "console-MB")
}

// BenchmarkHistoryFullMemory is the heap the locks' history holds at its bounds: historyKeys
// keys, each with historySpans holdings (values of a lockscope lock's length), historyMarks
// marks and historySamples waiter counts, the worst a console keeps however large the census.
func BenchmarkHistoryFullMemory(b *testing.B) {
	var held uint64
	for b.Loop() {
		before := liveHeap()
		h := newLockHistory()
		for k := range historyKeys {
			id := fmt.Sprintf("lock:order:%07d", k)
			for i := range historySpans {
				at := t0.Add(time.Duration(i) * time.Second)
				value := fmt.Sprintf("api-%d:req-%d:%d:%016x", i%97, i, at.UnixMilli(), k*historySpans+i)
				h.held(id, fmt.Sprintf("api-%d", i%97), value, at, 30*time.Second, true)
				h.ended(id, fmt.Sprintf("api-%d", i%97), value, at.Add(time.Second/2), 0, endReleased)
			}
			for i := range historyMarks {
				h.mark(id, "api-1", markStale, t0.Add(time.Duration(i)*time.Second))
			}
			for i := range historySamples {
				h.waiting(id, t0.Add(time.Duration(i)*time.Second/2), i%7)
			}
		}
		held = max(held, liveHeap()-before)
		if len(h.keys) != historyKeys || len(h.of("lock:order:0000000").spans) != historySpans {
			b.Fatalf("%d keys, %d spans", len(h.keys), len(h.of("lock:order:0000000").spans))
		}
		runtime.KeepAlive(h)
	}
	b.ReportMetric(float64(held)/(1<<20), "history-MB")
}
