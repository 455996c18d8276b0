package ui

import (
	"testing"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// The pictures of the detail view (timeline.go), as golden screens: each scenario feeds the
// model what it would receive (locklib events, census batches, demo snapshots) with times
// before the frozen now (t0), then opens the lock's details.

// lockEvent is a locklib event of key at t0+at.
func lockEvent(typ locklib.EventType, key, node, value string, at time.Duration) protocol.Event {
	return protocol.Event{Type: string(typ), Key: key, Node: node, Value: value, AtMs: t0.Add(at).UnixMilli()}
}

func sendEvents(m *Model, events ...protocol.Event) {
	for _, ev := range events {
		m.Update(eventMsg{event: ev})
	}
}

func withTTL(ev protocol.Event, ttl time.Duration) protocol.Event {
	ev.TTLMs = ttl.Milliseconds()
	return ev
}

func withWaiters(ev protocol.Event, n int64) protocol.Event {
	ev.Waiters = n
	return ev
}

func withHold(ev protocol.Event, hold time.Duration) protocol.Event {
	ev.HoldMs = hold.Milliseconds()
	return ev
}

// openDetails selects key and opens its details.
func openDetails(t *testing.T, m *Model, key string) {
	t.Helper()
	selectKey(t, m, key)
	typeKeys(m, "enter")
}

// handOffsAndGap is a locklib lock passed from api-3 to api-5 at once, then to api-7 after
// a gap of 6s, with waiters queuing; api-5's acquisition arrives twice.
func handOffsAndGap(t *testing.T, width, height int) *Model {
	m, _ := newTestModel(t, width, height)
	const key = "lock:order:1001"
	v3, v5, v7 := "api-3:req-1:1:aa", "api-5:req-2:2:bb", fixture()[0].Value
	acq5 := withWaiters(withTTL(lockEvent(locklib.EventAcquired, key, "api-5", v5, -41*time.Second), 30*time.Second), 2)
	sendEvents(m,
		withWaiters(withTTL(lockEvent(locklib.EventAcquired, key, "api-3", v3, -55*time.Second), 30*time.Second), 0),
		withWaiters(lockEvent(locklib.EventWaiting, key, "api-5", "", -50*time.Second), 1),
		withWaiters(lockEvent(locklib.EventWaiting, key, "api-7", "", -45*time.Second), 2),
		withHold(lockEvent(locklib.EventReleased, key, "api-3", v3, -41*time.Second), 14*time.Second),
		acq5, acq5,
		withHold(lockEvent(locklib.EventReleased, key, "api-5", v5, -30*time.Second), 11*time.Second),
		withWaiters(withTTL(lockEvent(locklib.EventAcquired, key, "api-7", v7, -24*time.Second), 30*time.Second), 0),
		withTTL(lockEvent(locklib.EventRenewed, key, "api-7", v7, -14*time.Second), 30*time.Second),
		withWaiters(lockEvent(locklib.EventWaiting, key, "api-9", "", -8*time.Second), 3),
	)
	openDetails(t, m, key)
	return m
}

func TestGoldenTimelineHandOffs120x30(t *testing.T) {
	m := handOffsAndGap(t, 120, 30)
	golden.RequireEqual(t, m.View().Content)
}

// At 20 columns the fields wrap; the timeline is scrolled to.
func TestGoldenTimelineHandOffs20x30(t *testing.T) {
	m := handOffsAndGap(t, 20, 30)
	for range 17 {
		typeKeys(m, "down")
	}
	golden.RequireEqual(t, m.View().Content)
}

// withDemo runs the model as the console of a demo (its pane fed by the snapshots the tests send).
func withDemo(o *Options) { o.Demo = &recordingDemo{} }

// demoLockAt is key in the census read at t0+at, held by node with value.
func demoLockAt(key, node, value string, at time.Duration) scanner.Lock {
	return scanner.Lock{Key: key, Format: scanner.FormatLockscope, Type: "string", Node: node, Value: value,
		TTL: 2 * time.Second, FetchedAt: t0.Add(at), Addr: "127.0.0.1:6379"}
}

// sendDemo sends a demo snapshot taken at t0+at: workers in their states on the resources,
// and its events.
func sendDemo(m *Model, clk *fakeClock, at time.Duration, resources []string, workers []demo.WorkerSnapshot, events ...demo.Event) {
	clk.t = t0.Add(at)
	m.Update(demoSnapshotMsg{snap: demo.Snapshot{Resources: resources, Workers: workers, Events: events}})
	clk.t = t0
}

// demoEventAt is the demo's event seq at t0+at, marking worker's holding of resource.
func demoEventAt(seq uint64, at time.Duration, mark demo.Mark, worker, resource, text string) demo.Event {
	return demo.Event{Seq: seq, At: t0.Add(at), Text: text, Mark: mark, Worker: worker, Resource: resource}
}

func worker(name string, state demo.WorkerState, resource string) demo.WorkerSnapshot {
	return demo.WorkerSnapshot{Name: name, State: state, Resource: resource}
}

// The demo's lock of the crash and pause pictures, its holders' values and its TTL.
const (
	ordersKey                            = "lock:demo:orders"
	demoV1, demoV2, demoV3               = "demo-w1:w1-1:1:01", "demo-w2:w2-1:2:02", "demo-w3:w3-1:3:03"
	demoTTL                time.Duration = 2 * time.Second
)

// demoW1Holding is a demo console whose census reads ordersKey held by holder with value, and
// which heard demo-w1 obtain it 12 s ago and renew it once (its lock then expires 9.3 s ago).
func demoW1Holding(t *testing.T, width, height int, holder, value string) (*Model, *fakeClock) {
	m, clk := newTestModel(t, width, height, withDemo)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{demoLockAt(ordersKey, holder, value, 0)}})
	sendEvents(m,
		withTTL(lockEvent(locklib.EventAcquired, ordersKey, "demo-w1", demoV1, -12*time.Second), demoTTL),
		withTTL(lockEvent(locklib.EventRenewed, ordersKey, "demo-w1", demoV1, -11300*time.Millisecond), demoTTL),
	)
	return m, clk
}

// crashGap is the demo's crash under locklib: demo-w1 crashes holding lock:demo:orders; its
// lock stays in Redis, silent, until its TTL runs out; demo-w2 gets it after expiry.
func crashGap(t *testing.T, width, height int) *Model {
	m, clk := demoW1Holding(t, width, height, "demo-w3", demoV3)
	sendDemo(m, clk, -11*time.Second, []string{ordersKey}, nil,
		demoEventAt(1, -11*time.Second, demo.MarkCrash, "demo-w1", ordersKey, "demo-w1 crashed holding lock:demo:orders (token 1)"))
	sendEvents(m,
		withWaiters(withTTL(lockEvent(locklib.EventAcquired, ordersKey, "demo-w2", demoV2, -9*time.Second), demoTTL), 1),
		withHold(lockEvent(locklib.EventReleased, ordersKey, "demo-w2", demoV2, -6*time.Second), 3*time.Second),
		withTTL(lockEvent(locklib.EventAcquired, ordersKey, "demo-w3", demoV3, -6*time.Second), demoTTL),
	)
	openDetails(t, m, ordersKey)
	return m
}

func TestGoldenTimelineCrashGap120x30(t *testing.T) {
	golden.RequireEqual(t, crashGap(t, 120, 30).View().Content)
}

// staleRefused is the demo's pause under locklib: demo-w1 freezes holding the lock, which
// expires; demo-w2 takes it; demo-w1 wakes, writes, and the resource refuses the stale write.
func staleRefused(t *testing.T, width, height int) *Model {
	m, clk := demoW1Holding(t, width, height, "demo-w2", demoV2)
	sendDemo(m, clk, -11*time.Second, []string{ordersKey}, nil,
		demoEventAt(1, -11*time.Second, demo.MarkPause, "demo-w1", ordersKey, "demo-w1 paused holding lock:demo:orders (token 1)"))
	sendEvents(m, withWaiters(withTTL(lockEvent(locklib.EventAcquired, ordersKey, "demo-w2", demoV2, -9*time.Second), demoTTL), 1))
	sendDemo(m, clk, -5*time.Second, []string{ordersKey}, []demo.WorkerSnapshot{worker("demo-w2", demo.Working, ordersKey)},
		demoEventAt(2, -5*time.Second, demo.MarkStaleRefused, "demo-w1", ordersKey, "demo-w1: late write to lock:demo:orders refused (stale fencing token 1)"))
	sendEvents(m, lockEvent(locklib.EventLost, ordersKey, "demo-w1", demoV1, -4*time.Second))
	openDetails(t, m, ordersKey)
	return m
}

func TestGoldenTimelineStaleRefused120x30(t *testing.T) {
	golden.RequireEqual(t, staleRefused(t, 120, 30).View().Content)
}

// naiveOverlap is `demo --lock naive`: demo-w1's key expires while it works; demo-w2 takes the
// lock and works too: two holders at once, which the census alone (one value at a time)
// cannot show but the workers' sections do.
func naiveOverlap(t *testing.T, width, height int) *Model {
	m, clk := newTestModel(t, width, height, withDemo)
	const key = "lock:naive:orders"
	v1, v2, v3 := "demo-w1:w1-1:1", "demo-w2:w2-1:2", "demo-w3:w3-1:3"
	res := []string{key}
	at := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	census := func(ms int, node, value string) {
		feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{demoLockAt(key, node, value, at(ms))}})
	}
	sendDemo(m, clk, at(-13000), res, nil)
	for ms := -12000; ms <= -7000; ms += 500 {
		ws := []demo.WorkerSnapshot{worker("demo-w1", demo.Working, key)}
		if ms >= -8500 {
			ws = append(ws, worker("demo-w2", demo.Working, key))
		}
		sendDemo(m, clk, at(ms), res, ws)
		switch ms {
		case -11500:
			census(ms, "demo-w1", v1)
		case -8500:
			census(ms, "demo-w2", v2)
		}
	}
	for ms := -6500; ms <= 0; ms += 500 {
		var ws []demo.WorkerSnapshot
		switch {
		case ms <= -5000:
			ws = append(ws, worker("demo-w2", demo.Working, key))
		case ms >= -4000 && ms <= -1000:
			ws = append(ws, worker("demo-w3", demo.Working, key))
		}
		sendDemo(m, clk, at(ms), res, ws)
		if ms == -4000 {
			census(ms, "demo-w3", v3)
		}
	}
	openDetails(t, m, key)
	return m
}

func TestGoldenTimelineNaiveOverlap120x30(t *testing.T) {
	golden.RequireEqual(t, naiveOverlap(t, 120, 30).View().Content)
}

// censusOnly is a redsync lock (no events, no holder name: its value tells holdings apart)
// from the census's successive reads: held, gone, taken again by another value.
func censusOnly(t *testing.T, width, height int) *Model {
	m, clk := newTestModel(t, width, height)
	const key = "lock:pay:55"
	pay := fixture()[2]
	read := func(at time.Duration, value string, gone bool) {
		l := pay
		l.FetchedAt, l.Value, l.Gone = t0.Add(at), value, gone
		clk.t = t0.Add(at)
		feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 3, Locks: []scanner.Lock{l}})
		m.Update(tickMsg{}) // the table's keys on screen are tracked
	}
	read(-58*time.Second, "c2VjcmV0LXZhbHVlLTE=", false)
	read(-45*time.Second, "c2VjcmV0LXZhbHVlLTE=", false)
	read(-40*time.Second, "", true)
	read(-35*time.Second, "b3RoZXItdmFsdWUtMg==", false)
	read(-20*time.Second, "b3RoZXItdmFsdWUtMg==", false)
	read(-12*time.Second, pay.Value, false)
	read(0, pay.Value, false)
	openDetails(t, m, key)
	return m
}

func TestGoldenTimelineCensusOnly120x30(t *testing.T) {
	golden.RequireEqual(t, censusOnly(t, 120, 30).View().Content)
}

// TestTimelineFitsEveryWidth: at every width from 1 to 130 columns, every line of every
// scenario's pictures fits (nothing wraps on screen) and nothing panics.
func TestTimelineFitsEveryWidth(t *testing.T) {
	for name, scenario := range map[string]func(*testing.T, int, int) *Model{
		"hand-offs": handOffsAndGap, "crash": crashGap, "stale": staleRefused, "naive": naiveOverlap, "census": censusOnly,
	} {
		m := scenario(t, 120, 30)
		k := m.history.of(m.table.selKey)
		for width := 1; width <= 130; width++ {
			for _, span := range timelineZooms {
				for i, line := range timelineLines(k, timelineView{now: m.now, span: span, width: width, st: m.st}) {
					if w := lipgloss.Width(line); w > width {
						t.Fatalf("%s at %d columns, %v: line %d is %d wide: %q", name, width, span, i, w, ansi.Strip(line))
					}
				}
			}
		}
	}
}

// TestNearestRank: the holds' p50 of 11 s and 14 s is 11 s (it was the max, 14 s: one rank high).
func TestNearestRank(t *testing.T) {
	s := func(secs ...int) []time.Duration {
		var out []time.Duration
		for _, n := range secs {
			out = append(out, time.Duration(n)*time.Second)
		}
		return out
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{s(11, 14), 0.5, 11 * time.Second},
		{s(11, 14), 0.9, 14 * time.Second},
		{s(7), 0.5, 7 * time.Second},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.5, 5 * time.Second},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9 * time.Second},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 1, 10 * time.Second},
	} {
		if got := nearestRank(tc.sorted, tc.p); got != tc.want {
			t.Errorf("nearestRank(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

// TestOverlapOfASectionAndAHolding: a demo worker's section that goes on while another
// holder holds the lock overlaps it from the holding's start to its end, but for the slack
// of two sources' clocks (overlapSlack: milliseconds, not seconds); a section that ends as the next
// holding starts does not. (overlapSlack could be raised to 10 s with every test passing.)
func TestOverlapOfASectionAndAHolding(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	k := &keyHistory{spans: []holdSpan{
		{holder: "demo-w1", from: at(-20), to: at(-10), section: true, end: endReleased},
		{holder: "demo-w2", value: "v2", from: at(-15), to: at(-12), obtained: true, end: endReleased},
		{holder: "demo-w3", value: "v3", from: at(-10), to: at(-5), obtained: true, end: endReleased},
	}}
	got := overlaps(k, t0)
	if len(got) != 1 {
		t.Fatalf("overlaps %v: want one, demo-w1's section with demo-w2's holding", got)
	}
	const clocks = 50 * time.Millisecond // what two sources' clocks may differ by, at most
	if from, to := got[0][0].Sub(at(-15)), at(-12).Sub(got[0][1]); from < 0 || from > clocks || to < 0 || to > clocks {
		t.Errorf("overlap %v..%v, want -15s..-12s within %v", got[0][0].Sub(t0), got[0][1].Sub(t0), clocks)
	}
}

// A hold whose end was recorded before its start (a negative duration: two sources' clocks,
// or the holders of a shared lock) lands in the first bucket; its logarithm was NaN, the
// bucket index the most negative int, and the rw-pool demo's console panicked.
func TestLogBucketNegativeHolds(t *testing.T) {
	for _, c := range [][3]time.Duration{{-5 * time.Millisecond, -10 * time.Millisecond, time.Second}, {0, -time.Second, time.Second}, {time.Nanosecond, 0, 2}} {
		if b := logBucket(c[0], c[1], c[2], histogramBuckets); b < 0 || b >= histogramBuckets {
			t.Errorf("logBucket(%v, %v, %v) = %d, want a bucket in [0, %d)", c[0], c[1], c[2], b, histogramBuckets)
		}
	}
}
