package ui

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// emptyModel is a 120x30 model with a frozen clock at t0 and an empty census.
func emptyModel(t testing.TB, opts ...modelOpt) (*Model, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: t0}
	o := Options{Target: testTarget, Now: clk.now, Admin: actions.New(testTarget, actions.Options{Operator: "tester"})}
	for _, f := range opts {
		f(&o)
	}
	m := newModel(context.Background(), o, nil, nil)
	m.Update(tea.ColorProfileMsg{Profile: colorprofile.TrueColor})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	return m, clk
}

// holderValue is a locklib value of holder n (its random part), entered count times (0: not
// re-entrant).
func holderValue(node string, n, count int) string {
	return protocol.Value{Node: node, AcquiredAt: t0, Rand: fmt.Sprintf("%016x", n), Count: count}.String()
}

// heldBy is a census record of key holding value, read at the clock's now.
func heldBy(key, value string, at time.Time) scanner.Lock {
	return scanner.Lock{Key: key, Format: scanner.FormatLockscope, Type: "string", Value: value,
		TTL: 10 * time.Second, FetchedAt: at, Addr: "127.0.0.1:6379"}
}

// census feeds one batch of pass gen.
func census(m *Model, gen uint64, locks ...scanner.Lock) {
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: gen, Locks: locks})
}

func event(m *Model, typ locklib.EventType, key, value string, waiters int64) {
	m.Update(eventMsg{event: protocol.Event{Type: string(typ), Key: key, Value: value, Waiters: waiters, AtMs: t0.UnixMilli()}})
}

// figuresOf is group name's line of the overview now (zero when it has none).
func figuresOf(m *Model, name string) groupFigures {
	for _, f := range m.contention.ranked(m.clock()) {
		if f.name == name {
			return f
		}
	}
	return groupFigures{}
}

// handoffs is group name's hand-offs in the window.
func handoffs(m *Model, name string) int {
	n := 0
	for _, h := range figuresOf(m, name).handLine {
		if !math.IsNaN(h) {
			n += int(h)
		}
	}
	return n
}

// handoffStep is a step of a hand-off test: what it does, and the group's hand-offs after it.
type handoffStep struct {
	what string
	do   func()
	want int
}

// runHandoffSteps runs steps a second apart, checking group's hand-offs after each.
func runHandoffSteps(t *testing.T, m *Model, clk *fakeClock, group string, steps []handoffStep) {
	t.Helper()
	for _, s := range steps {
		clk.advance(time.Second)
		s.do()
		if got := handoffs(m, group); got != s.want {
			t.Fatalf("after %s: %d hand-offs, want %d", s.what, got, s.want)
		}
	}
}

func TestContentionCensusHandoffs(t *testing.T) {
	m, clk := emptyModel(t)
	const key = "lock:orders:1"
	a, b := holderValue("api-1", 1, 0), holderValue("api-2", 2, 0)
	steps := []handoffStep{
		{"first sighting", func() { census(m, 1, heldBy(key, a, clk.t)) }, 0},
		{"re-read, same value", func() { census(m, 2, heldBy(key, a, clk.t)) }, 0},
		{"renewal: another TTL", func() { l := heldBy(key, a, clk.t); l.TTL = time.Minute; census(m, 3, l) }, 0},
		{"another holder", func() { census(m, 4, heldBy(key, b, clk.t)) }, 1},
		{"duplicate record", func() { census(m, 4, heldBy(key, b, clk.t)) }, 1},
		{"gone", func() { census(m, 5, scanner.Lock{Key: key, Gone: true, Addr: "127.0.0.1:6379"}) }, 1},
		{"back, same holder", func() { census(m, 6, heldBy(key, b, clk.t)) }, 1},
		{"pruned by a complete pass", func() {
			feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 7, Census: scanner.Census{FetchedAt: clk.t}})
		}, 1},
		{"back with another holder", func() { census(m, 8, heldBy(key, a, clk.t)) }, 2},
	}
	runHandoffSteps(t, m, clk, "orders", steps)
	if f := figuresOf(m, "orders"); f.locks != 1 {
		t.Fatalf("%d locks in orders, want 1", f.locks)
	}
	if n := len(m.contention.remembered); n != 0 {
		t.Fatalf("%d holders still remembered for keys back in the census", n)
	}
}

func TestContentionReentryIsNoHandoff(t *testing.T) {
	m, clk := emptyModel(t)
	census(m, 1, heldBy("lock:orders:1", holderValue("api-1", 1, 1), clk.t), heldBy("lock:orders:2", holderValue("api-2", 2, 1), clk.t))
	census(m, 2, heldBy("lock:orders:1", holderValue("api-1", 1, 2), clk.t))
	event(m, locklib.EventAcquired, "lock:orders:2", holderValue("api-2", 2, 2), 0)
	event(m, locklib.EventAcquired, "lock:orders:2", holderValue("api-2", 2, 3), 0)
	redisson := func(count int) scanner.Lock {
		return scanner.Lock{Key: "lock:carts:1", Format: scanner.FormatRedisson, Type: "hash",
			Owners: []scanner.Owner{{ID: "8f0c:1", Count: count}}, Value: fmt.Sprintf("8f0c:1=%d", count), FetchedAt: clk.t}
	}
	census(m, 1, redisson(1))
	census(m, 2, redisson(2))
	if got := handoffs(m, "orders") + handoffs(m, "carts"); got != 0 {
		t.Fatalf("%d hand-offs from re-entries, want 0", got)
	}
	census(m, 3, heldBy("lock:orders:1", holderValue("api-1", 2, 1), clk.t)) // a new acquisition
	if got := handoffs(m, "orders"); got != 1 {
		t.Fatalf("%d hand-offs after a new holder, want 1", got)
	}
}

func TestContentionEventHandoffs(t *testing.T) {
	m, clk := emptyModel(t)
	const key = "lock:pay:1"
	a, b, c := holderValue("api-1", 1, 0), holderValue("api-2", 2, 0), holderValue("api-3", 3, 0)
	steps := []handoffStep{
		{"first acquired", func() { event(m, locklib.EventAcquired, key, a, 0) }, 0},
		{"renewed", func() { event(m, locklib.EventRenewed, key, a, 0) }, 0},
		{"waiting", func() { event(m, locklib.EventWaiting, key, "", 2) }, 0},
		{"released", func() { event(m, locklib.EventReleased, key, a, 1) }, 0},
		{"acquired by another", func() { event(m, locklib.EventAcquired, key, b, 1) }, 1},
		{"its copy (another instance of a Redlock set)", func() { event(m, locklib.EventAcquired, key, b, 1) }, 1},
		// The census reads the key after the events: events count this key, not the census.
		{"census sees it", func() { census(m, 1, heldBy(key, b, clk.t)) }, 1},
		{"lost, then another", func() {
			event(m, locklib.EventLost, key, b, 0)
			event(m, locklib.EventAcquired, key, c, 0)
		}, 2},
		{"census catches up", func() { census(m, 2, heldBy(key, c, clk.t)) }, 2},
	}
	runHandoffSteps(t, m, clk, "pay", steps)
}

// TestContentionLateLostIsNoHandoff: a holder learns it lost its lock after the next holder
// took it (its renewal is refused then: a GC pause, the TTL ran out), so its lost event comes
// after the next acquired one. The lost holder does not hold the lock again: no hand-off back
// to it, nor from it to the holder it lost to (each was counted: 3 hand-offs for one).
func TestContentionLateLostIsNoHandoff(t *testing.T) {
	m, clk := emptyModel(t)
	const key = "lock:pay:1"
	a, b, c := holderValue("api-1", 1, 0), holderValue("api-2", 2, 0), holderValue("api-3", 3, 0)
	steps := []handoffStep{
		{"first acquired", func() { event(m, locklib.EventAcquired, key, a, 0) }, 0},
		{"taken by another after a's TTL ran out", func() { event(m, locklib.EventAcquired, key, b, 0) }, 1},
		{"a's lost, late", func() { event(m, locklib.EventLost, key, a, 0) }, 1},
		{"b renews", func() { event(m, locklib.EventRenewed, key, b, 0) }, 1},
		{"b releases", func() { event(m, locklib.EventReleased, key, b, 0) }, 1},
		{"acquired by a third", func() { event(m, locklib.EventAcquired, key, c, 0) }, 2},
	}
	runHandoffSteps(t, m, clk, "pay", steps)
}

// TestContentionEventAfterCensus: the first event about a key is compared with the holder the
// census knows, or knew before the key left it.
func TestContentionEventAfterCensus(t *testing.T) {
	m, clk := emptyModel(t)
	a, b := holderValue("api-1", 1, 0), holderValue("api-2", 2, 0)
	census(m, 1, heldBy("lock:pay:1", a, clk.t), heldBy("lock:pay:2", a, clk.t), heldBy("lock:pay:3", a, clk.t))
	event(m, locklib.EventAcquired, "lock:pay:1", a, 0)                               // the holder the census has
	event(m, locklib.EventAcquired, "lock:pay:2", b, 0)                               // another: 1
	census(m, 2, scanner.Lock{Key: "lock:pay:3", Gone: true, Addr: "127.0.0.1:6379"}) // released meanwhile
	event(m, locklib.EventAcquired, "lock:pay:3", b, 0)                               // the next holder: 2
	if got := handoffs(m, "pay"); got != 2 {
		t.Fatalf("%d hand-offs, want 2", got)
	}
}

func TestContentionWindow(t *testing.T) {
	m, clk := emptyModel(t)
	const key = "lock:orders:1"
	for i := range 11 { // 10 hand-offs, one every 2 s
		census(m, uint64(i+1), heldBy(key, holderValue("api", i, 0), clk.t))
		clk.advance(2 * time.Second)
	}
	f := figuresOf(m, "orders")
	if n := handoffs(m, "orders"); n != 10 {
		t.Fatalf("%d hand-offs, want 10", n)
	}
	if want := 10 / 22.0; f.rate < want*0.99 || f.rate > want*1.01 { // over the 22 s since the first record
		t.Fatalf("rate %.3f/s, want %.3f/s", f.rate, want)
	}
	clk.advance(rateSpan)
	if f := figuresOf(m, "orders"); f.rate != 0 || handoffs(m, "orders") != 10 {
		t.Fatalf("a minute later: rate %.3f/s and %d hand-offs in the window, want 0 and 10", f.rate, handoffs(m, "orders"))
	}
	clk.advance(contentionWindow)
	if n := handoffs(m, "orders"); n != 0 {
		t.Fatalf("a window later: %d hand-offs, want 0", n)
	}
	if f := figuresOf(m, "orders"); f.locks != 1 {
		t.Fatalf("the lock left the group: %+v", f)
	}
	// The window also moves when something happens: a hand-off now lands in the newest
	// bucket alone.
	census(m, 20, heldBy(key, holderValue("api", 99, 0), clk.t))
	if line := figuresOf(m, "orders").handLine; line[len(line)-1] != 1 || handoffs(m, "orders") != 1 {
		t.Fatalf("hand-offs line %v, want one in the newest bucket", line)
	}
	// A group without locks stays as long as its window has something.
	census(m, 21, scanner.Lock{Key: key, Gone: true, Addr: "127.0.0.1:6379"})
	if f := figuresOf(m, "orders"); f.name == "" {
		t.Fatal("the group left the overview with a hand-off in its window")
	}
	clk.advance(contentionWindow)
	if f := figuresOf(m, "orders"); f.name != "" {
		t.Fatalf("a group without locks or anything in its window is still shown: %+v", f)
	}
}

// TestContentionVanishedKeyForgotten: a key that comes back after the window counts as a
// first sighting.
func TestContentionVanishedKeyForgotten(t *testing.T) {
	m, clk := emptyModel(t)
	census(m, 1, heldBy("lock:orders:1", holderValue("api", 1, 0), clk.t))
	census(m, 2, scanner.Lock{Key: "lock:orders:1", Gone: true, Addr: "127.0.0.1:6379"})
	clk.advance(contentionWindow)
	census(m, 3, heldBy("lock:orders:1", holderValue("api", 2, 0), clk.t))
	if n := handoffs(m, "orders"); n != 0 {
		t.Fatalf("%d hand-offs, want 0", n)
	}
}

func TestContentionWaiters(t *testing.T) {
	m, clk := emptyModel(t)
	scanned := heldBy("lock:orders:1", holderValue("api", 1, 0), clk.t)
	scanned.Waiters, scanned.HasWaiters = 3, true
	census(m, 1, scanned, heldBy("lock:orders:2", holderValue("api", 2, 0), clk.t),
		heldBy("lock:pay:1", holderValue("api", 3, 0), clk.t))
	event(m, locklib.EventWaiting, "lock:orders:2", "", 2) // no scanner count: the event's
	event(m, locklib.EventWaiting, "lock:orders:1", "", 9) // the scanner's count wins
	event(m, locklib.EventWaiting, "lock:pay:9", "", 4)    // not in the census
	m.Update(tickMsg(clk.t))
	if f := figuresOf(m, "orders"); f.waiters != 5 || f.locks != 2 {
		t.Fatalf("orders: %d waiters, %d locks; want 5, 2", f.waiters, f.locks)
	}
	if f := figuresOf(m, "pay"); f.waiters != 0 {
		t.Fatalf("pay: %d waiters, want 0", f.waiters)
	}
	event(m, locklib.EventReleased, "lock:orders:2", holderValue("api", 2, 0), 0)
	m.Update(tickMsg(clk.t))
	if f := figuresOf(m, "orders"); f.waiters != 3 || f.waitLine[len(f.waitLine)-1] != 5 {
		t.Fatalf("orders after the release: %d waiters, the bucket's most %v; want 3, 5", f.waiters, f.waitLine[len(f.waitLine)-1])
	}
	clk.advance(contentionBucket)
	m.Update(tickMsg(clk.t))
	clk.advance(2 * contentionBucket)         // no sample: the buckets not sampled carry the waiters
	want := []float64{math.NaN(), 5, 3, 3, 3} // nothing before the first observation
	if f := figuresOf(m, "orders"); fmt.Sprint(f.waitLine[len(f.waitLine)-5:]) != fmt.Sprint(want) {
		t.Fatalf("orders: waiters line ends %v, want %v", f.waitLine[len(f.waitLine)-5:], want)
	}
	m.Update(tickMsg(clk.t)) // the window moves over the buckets not sampled
	if f := figuresOf(m, "orders"); fmt.Sprint(f.waitLine[len(f.waitLine)-5:]) != fmt.Sprint(want) {
		t.Fatalf("orders after a sample: waiters line ends %v, want %v", f.waitLine[len(f.waitLine)-5:], want)
	}
}

func TestContentionRanking(t *testing.T) {
	m, clk := emptyModel(t)
	waiting := func(key string, n int) scanner.Lock {
		l := heldBy(key, holderValue("api", len(key)+n, 0), clk.t)
		l.Waiters, l.HasWaiters = n, true
		return l
	}
	census(m, 1, waiting("lock:a:1", 1), waiting("lock:b:1", 4), waiting("lock:c:1", 1), waiting("lock:d:1", 0))
	census(m, 2, heldBy("lock:c:1", holderValue("x", 1, 0), clk.t)) // c: a hand-off, and no more waiter count
	l := heldBy("lock:c:1", holderValue("x", 2, 0), clk.t)
	l.Waiters, l.HasWaiters = 1, true
	census(m, 3, l)
	var names []string
	for _, f := range m.contention.ranked(clk.t) {
		names = append(names, f.name)
	}
	if want := []string{"b", "c", "a", "d"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("ranked %v, want %v (waiters, then hand-offs/s, then name)", names, want)
	}
}

// TestContentionGroupsCapped: 100,000 keys in as many would-be groups make at most maxGroups
// groups and keygroup.Other, which holds the rest; the remembered holders stay bounded too.
func TestContentionGroupsCapped(t *testing.T) {
	m, clk := emptyModel(t)
	const n = 100_000
	locks := make([]scanner.Lock, n)
	for i := range locks {
		locks[i] = heldBy(fmt.Sprintf("lock:g%d:1", i), holderValue("api", i, 0), clk.t)
	}
	m.locks.apply(locks, 1) // the census's path without the view builds of 100,000 rows
	gone := make([]scanner.Lock, n)
	for i := range gone {
		gone[i] = scanner.Lock{Key: locks[i].Key, Gone: true, Addr: locks[i].Addr}
	}
	m.locks.apply(gone[n/2:], 2)
	if len(m.contention.groups) != maxGroups+1 {
		t.Fatalf("%d groups, want %d", len(m.contention.groups), maxGroups+1)
	}
	if f := figuresOf(m, keygroup.Other); f.locks != n/2-maxGroups {
		t.Fatalf("%s has %d locks, want %d", keygroup.Other, f.locks, n/2-maxGroups)
	}
	if len(m.contention.remembered) > maxRememberedKeys {
		t.Fatalf("%d holders remembered, more than %d", len(m.contention.remembered), maxRememberedKeys)
	}
}

// TestContentionGroupRule: the model groups by the rule it is given.
func TestContentionGroupRule(t *testing.T) {
	rule, err := keygroup.Parse("prefix:lock:orders:eu,lock:orders")
	if err != nil {
		t.Fatal(err)
	}
	m, clk := emptyModel(t, func(o *Options) { o.Group = &rule })
	census(m, 1, heldBy("lock:orders:eu:1", "v1", clk.t), heldBy("lock:orders:us:1", "v2", clk.t), heldBy("lock:pay:1", "v3", clk.t))
	for name, want := range map[string]int{"lock:orders:eu": 1, "lock:orders": 1, keygroup.None: 1} {
		if f := figuresOf(m, name); f.locks != want {
			t.Fatalf("group %q: %d locks, want %d", name, f.locks, want)
		}
	}
}
