package ui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// TestLiveTimelineFollowsLocklib: a console on a real redis-server while three locklib
// clients take a lock in turn: api-a holds it, api-b waits and gets it at once when api-a
// releases (a hand-off), then after a gap api-c takes it and keeps it. The model's holdings
// match what the clients did (holders, order, times within the events' millisecond), the
// waiter was seen, and the detail view draws the three lanes.
func TestLiveTimelineFollowsLocklib(t *testing.T) {
	ctx, target := liveServer(t)
	m, console := liveTimelineConsole(t, ctx, target, nil)
	rdb := target.Clients[0]
	redistest.Eventually(t, "the console subscribed to the events", func() bool {
		n, err := rdb.PubSubNumSub(ctx, protocol.EventsChannel).Result()
		return err == nil && n[protocol.EventsChannel] > 0
	})

	const key = "lock:live:timeline"
	client := func(node string) *locklib.Client {
		c := locklib.New(rdb, locklib.WithNode(node))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b, c := client("api-a"), client("api-b"), client("api-c")
	type holding struct {
		holder   string
		from, to time.Time // to zero: still held
	}
	var did []holding

	la, err := a.Obtain(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	aFrom := time.Now()
	gotB := make(chan *locklib.Lock, 1)
	go func() {
		lb, err := b.Obtain(ctx, key, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		gotB <- lb
	}()
	redistest.Eventually(t, "api-b waiting", func() bool {
		return strings.Contains(screen(m), "waiting") || drainOne(console)
	})
	time.Sleep(300 * time.Millisecond)
	aTo := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-gotB
	bFrom := time.Now()
	did = append(did, holding{"api-a", aFrom, aTo})
	time.Sleep(300 * time.Millisecond)
	bTo := time.Now()
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	did = append(did, holding{"api-b", bFrom, bTo})
	time.Sleep(500 * time.Millisecond) // the gap
	lc, err := c.Obtain(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Release(context.Background()) })
	did = append(did, holding{"api-c", time.Now(), time.Time{}})

	console.waitFor("api-c's acquisition and the lock in the table", 10*time.Second, func(string) bool {
		k := m.history.of(key)
		if k == nil || len(k.spans) != 3 || indexOfKey(m.view.rows, key) < 0 {
			return false
		}
		for _, s := range k.spans {
			if !s.obtained {
				return false // its acquired event is still on the way
			}
		}
		return true
	})
	k := m.history.of(key)
	// The events carry milliseconds, taken inside the client around the command whose time
	// the test brackets: a holding starts at most a few milliseconds before the test saw Obtain
	// return and ends at most a few after it called Release.
	const slack = 50 * time.Millisecond
	for i, s := range k.spans {
		want := did[i]
		if s.holder != want.holder || s.section {
			t.Fatalf("holding %d: %s (section %v), want %s", i, s.holder, s.section, want.holder)
		}
		if d := want.from.Sub(s.from); d < -time.Millisecond || d > slack {
			t.Errorf("%s from %v, %v before Obtain returned", s.holder, s.from, d)
		}
		switch {
		case want.to.IsZero() && !s.open():
			t.Errorf("%s ended (%d) at %v: it still holds the lock", s.holder, s.end, s.to)
		case !want.to.IsZero() && s.end != endReleased:
			t.Errorf("%s ended %d, want released", s.holder, s.end)
		case !want.to.IsZero():
			if d := s.to.Sub(want.to); d < -time.Millisecond || d > slack {
				t.Errorf("%s to %v, %v after Release was called", s.holder, s.to, d)
			}
		}
	}
	if handOff := k.spans[1].from.Sub(k.spans[0].to); handOff < 0 || handOff > slack {
		t.Errorf("api-a to api-b: %v between, want a hand-off", handOff)
	}
	if gap := k.spans[2].from.Sub(k.spans[1].to); gap < 400*time.Millisecond || gap > time.Second {
		t.Errorf("api-b to api-c: %v between, want the 500ms gap", gap)
	}
	waited := 0
	for _, w := range k.waiters {
		waited = max(waited, w.n)
	}
	if waited != 1 {
		t.Errorf("at most %d waiters seen, want api-b's 1", waited)
	}

	selectKey(t, m, key)
	typeKeys(m, "enter", "z", "z") // 1 min, 5 min, 15 s: a cell is 140 ms
	out := screen(m)
	mustContain(t, out, "last 15s")
	for _, lane := range []string{"api-a", "api-b", "api-c"} {
		if !strings.ContainsAny(lineWith(t, out, "│"+lane+"  "), glyphHeld+glyphHeldLeft+glyphHeldRight) {
			t.Errorf("%s's lane has no held cell:\n%s", lane, out)
		}
	}
	mustContain(t, lineWith(t, out, "holds"), "2 held")
}

// drainOne handles one message waiting for the console, if any; it reports false, so that a
// condition polled with it keeps the console's messages flowing.
func drainOne(c *liveConsole) bool {
	select {
	case msg := <-c.msgs:
		if cmds, batch := subCmds(msg); batch {
			for _, sub := range cmds {
				c.run(sub)
			}
		} else if msg != nil {
			_, cmd := c.m.Update(msg)
			c.run(cmd)
		}
	default:
	}
	return false
}

// liveDemo is a console on a demo run with cfg on a real redis-server, as `lockscope demo
// --redis` runs it (events from the workers' locklib clients, the census, the snapshots).
func liveDemo(t *testing.T, cfg demo.Config) (*Model, *liveConsole, *demo.Controller) {
	t.Helper()
	ctx, target := liveServer(t)
	var err error
	cfg.Servers, err = demo.OnServers(target)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := demo.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Stop() })
	m, console := liveTimelineConsole(t, ctx, target, ctrl)
	return m, console, ctrl
}

// liveServer is a redis-server of the test's own, connected to.
func liveServer(t *testing.T) (context.Context, connect.Target) {
	t.Helper()
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	target, _, err := connect.Open(ctx, connect.Config{URLs: []string{"redis://" + srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(target.Close)
	return ctx, target
}

// liveTimelineConsole is a 120x40 console on target as Run starts one (the census followed,
// the events subscribed), running the demo ctrl when not nil.
func liveTimelineConsole(t *testing.T, ctx context.Context, target connect.Target, ctrl *demo.Controller) (*Model, *liveConsole) {
	t.Helper()
	sc := scanner.New(target, scanner.Options{Interval: 200 * time.Millisecond})
	follower := sc.Follow(ctx)
	o := Options{Target: target, Scanner: sc}
	if ctrl != nil {
		o.Demo = ctrl
	}
	m := newModel(ctx, o, follower.Updates(), subscribeEvents(ctx, target.Clients))
	m.focus = follower.Focus
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m, newLiveConsole(t, m)
}

// demoOverlaps are the overlaps the history shows on the demo's locks.
func demoOverlaps(m *Model, ctrl *demo.Controller) int {
	n := 0
	for _, key := range ctrl.Resources() {
		if k := m.history.of(key); k != nil {
			n += len(overlaps(k, m.now))
		}
	}
	return n
}

// demoMarked says whether a mark of kind is on one of the demo's locks.
func demoMarked(m *Model, ctrl *demo.Controller, kind markKind) bool {
	for _, key := range ctrl.Resources() {
		if k := m.history.of(key); k != nil && slices.ContainsFunc(k.marks, func(mk historyMark) bool { return mk.kind == kind }) {
			return true
		}
	}
	return false
}

// TestLiveTimelineDemo: locklib's mixed run (healthy, slow, crash, pause phases), on a real
// redis-server, draws no overlap (the snapshots' sections and the events' holdings agree),
// marks its crash, the crashed holder's lock silent until it expires, and its refused stale
// write; the naive lock's pause run draws the overlaps its checker counts.
func TestLiveTimelineDemo(t *testing.T) {
	redistest.Slow(t)
	t.Run("locklib", func(t *testing.T) {
		cfg := demo.Config{Scenario: demo.Mixed, TTL: 500 * time.Millisecond, PhaseLength: 1500 * time.Millisecond, Seed: 1}
		m, console, ctrl := liveDemo(t, cfg)
		console.waitFor("a crash and a refused stale write", 20*time.Second, func(string) bool {
			k := ctrl.Snapshot().Counters
			return k.ExpiredAfterCrash > 0 && k.StaleRejected > 0
		})
		console.waitFor("their marks", 5*time.Second, func(string) bool {
			return demoMarked(m, ctrl, markCrash) && demoMarked(m, ctrl, markStale)
		})
		if n := demoOverlaps(m, ctrl); n != 0 || ctrl.Snapshot().Counters.Overlaps != 0 {
			t.Errorf("%d overlaps drawn, %d counted, in locklib's run", n, ctrl.Snapshot().Counters.Overlaps)
		}
		// The crashed holder's lock, held by nobody alive until it expired: its events may come
		// in after the snapshot that carried the crash, and on a loaded machine a crash can
		// strike a lock already lost (a late renewal): the next crash phase then shows it.
		console.waitFor("a crashed holder's lock drawn silent until it ended", 20*time.Second, func(string) bool {
			for _, key := range ctrl.Resources() {
				for _, s := range m.history.of(key).spans {
					if !s.silent.IsZero() && !s.open() && s.to.Sub(s.silent) > 100*time.Millisecond {
						return true
					}
				}
			}
			return false
		})
		for _, key := range ctrl.Resources() {
			sections, obtained := 0, 0
			for _, s := range m.history.of(key).spans {
				if s.section {
					sections++
				}
				if s.obtained {
					obtained++
				}
			}
			if sections == 0 || obtained == 0 {
				t.Errorf("%s: %d sections, %d holdings dated by events", key, sections, obtained)
			}
		}
	})
	t.Run("naive", func(t *testing.T) {
		m, console, ctrl := liveDemo(t, demo.Config{Lock: demo.Naive, Scenario: demo.Pause, TTL: time.Second, Seed: 1})
		console.waitFor("an overlap drawn", 20*time.Second, func(string) bool { return demoOverlaps(m, ctrl) > 0 })
		// The checker counts an overlap at the late write, after the picture saw both work.
		console.waitFor("the overlap counted", 10*time.Second, func(string) bool {
			k := ctrl.Snapshot().Counters
			return k.Overlaps > 0 || k.OverlappingHolders > 0
		})
	})
}
