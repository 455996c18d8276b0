package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
)

// The console after a failover: the event log's failover line, the ⇡ of a fence token that
// jumped, its explanation in the detail view.

const (
	oldMaster = "127.0.0.1:7001"
	newMaster = "127.0.0.1:7002"
	// jumpedToken is a token from the new master's clock floor (microseconds).
	jumpedToken = 1796026976406867
)

// orderAt is lock:order:1001 of the fixture with fence token fence, read at.
func orderAt(fence int64, at time.Time) scanner.Lock {
	l := fixture()[0]
	l.Fence, l.FetchedAt = fence, at
	return l
}

// failedOver is the test model after a master switch (pass 1 complete) and, in the pass
// after it, lock:order:1001 re-read with the new master's token.
func failedOver(t *testing.T, width, height int) *Model {
	t.Helper()
	m, _ := newTestModel(t, width, height)
	switchMaster(m, oldMaster, newMaster)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
	return m
}

func TestFenceJumpShownAfterFailover(t *testing.T) {
	m := failedOver(t, 120, 30)
	out := screen(m)
	mustContain(t, out, "failover     master "+oldMaster+" → "+newMaster)
	mustContain(t, out, "fence-jump   lock:order:1001 fence=1042 → 1796026976406867 after failover "+oldMaster+" → "+newMaster)
	row := lineWith(t, out, "lock:order:1001")
	mustContain(t, row, "⇡1796026976406867")
	for _, other := range []string{"lock:cart:7", "lock:pay:55"} {
		mustNotContain(t, lineWith(t, out, other), "⇡")
	}

	// A re-read of the same token logs nothing more; the mark stays past the window.
	for gen := uint64(2); gen <= 5; gen++ {
		feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: gen, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
		feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: gen, Census: scanner.Census{FetchedAt: t0}})
	}
	if n := strings.Count(screen(m), "fence-jump"); n != 1 {
		t.Fatalf("%d fence-jump lines:\n%s", n, screen(m))
	}
	mustContain(t, lineWith(t, screen(m), "lock:order:1001"), "⇡1796026976406867")

	// Out of the window a new, higher token is an ordinary acquisition: the mark goes.
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 6, Locks: []scanner.Lock{orderAt(jumpedToken+5, t0)}})
	mustNotContain(t, lineWith(t, screen(m), "lock:order:1001"), "⇡")
	if m.fence.atSwitch != nil {
		t.Fatal("the window is still open after three passes")
	}
}

func TestFenceTokenDownMarkedWithoutFailover(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{orderAt(412, t0)}})
	out := screen(m)
	mustContain(t, out, "fence-jump   lock:order:1001 fence=1042 → 412 went DOWN (never legitimate)")
	mustContain(t, lineWith(t, out, "lock:order:1001"), "⇡412")
	mustNotContain(t, out, "failover ")
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "enter")
	mustContain(t, strings.Join(strings.Fields(screen(m)), " "), "fence token went DOWN 1042 → 412: never legitimate")
}

// A lock lost in the failover (gone from the census) and taken again on the new master is
// compared with its token at the switch.
func TestFenceJumpAfterLockLost(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	switchMaster(m, oldMaster, newMaster)
	var rest []scanner.Lock
	for _, l := range fixture()[1:] {
		l.FetchedAt = t0
		rest = append(rest, l)
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: rest})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0}})
	if m.locks.get("lock:order:1001") != nil {
		t.Fatal("pass 2 did not see lock:order:1001: it should be gone")
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 3, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
	mustContain(t, lineWith(t, screen(m), "lock:order:1001"), "⇡1796026976406867")
}

func TestGoldenFenceJumpDetail120x30(t *testing.T) { goldenJumpDetail(t, 120, 30) }
func TestGoldenFenceJumpDetail100x30(t *testing.T) { goldenJumpDetail(t, 100, 30) }
func TestGoldenFenceJumpDetail60x15(t *testing.T)  { goldenJumpDetail(t, 60, 15) }

func goldenJumpDetail(t *testing.T, width, height int) {
	m := failedOver(t, width, height)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "enter")
	mustContain(t, strings.Join(strings.Fields(screen(m)), " "), "fence token jumped 1042 → 1796026976406867")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenFenceJumpTable120x30(t *testing.T) {
	golden.RequireEqual(t, failedOver(t, 120, 30).View().Content)
}

// lineWith is the first line of out that contains s.
func lineWith(t *testing.T, out, s string) string {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, out)
	return ""
}

// switchMaster delivers a master switch the way the sentinels' stream does.
func switchMaster(m *Model, from, to string) {
	m.Update(masterSwitchMsg{sw: connect.MasterSwitch{Name: "orders", From: from, To: to, At: t0}})
}

// sentinelTarget is a Sentinel deployment as the status bar sees it (a literal target: its
// master's name comes with the switches).
var sentinelTarget = connect.Target{Mode: connect.Sentinel, Addrs: []string{"127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"}}

func onSentinel(o *Options) { o.Target = sentinelTarget }

// sentinelModel is the test model on a Sentinel target whose sentinels named oldMaster, then
// announced a failover to newMaster with lock:order:1001's token jumping after it.
func sentinelModel(t *testing.T, width, height int) *Model {
	t.Helper()
	m, _ := newTestModel(t, width, height, onSentinel)
	m.Update(masterMsg{addr: oldMaster})
	mustContain(t, screen(m), "sentinel  → "+oldMaster)
	switchMaster(m, oldMaster, newMaster)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
	return m
}

func TestStatusBarFollowsTheMaster(t *testing.T) {
	m := sentinelModel(t, 120, 30)
	out := screen(m)
	mustContain(t, lineWith(t, out, "lockscope"), "sentinel orders → "+newMaster)
	mustContain(t, out, "failover     master "+oldMaster+" → "+newMaster)
	for _, key := range []string{"lock:order:1001", "lock:cart:7", "lock:inv:9", "lock:pay:55", "lock:queue"} {
		lineWith(t, out, key) // the table is kept
	}
	// A late answer to the first question does not move the bar back.
	m.Update(masterMsg{addr: oldMaster})
	mustContain(t, lineWith(t, screen(m), "lockscope"), "sentinel orders → "+newMaster)
}

// A switch of a session switched away from is dropped, and its reader is not re-armed.
func TestStaleMasterSwitchDropped(t *testing.T) {
	m := sentinelModel(t, 120, 30)
	_, cmd := m.Update(masterSwitchMsg{sw: connect.MasterSwitch{Name: "orders", From: newMaster, To: "127.0.0.1:7003", At: t0}, session: 7})
	if cmd != nil {
		t.Fatal("a stale session's switch re-armed a reader")
	}
	out := screen(m)
	mustNotContain(t, out, "127.0.0.1:7003")
	mustContain(t, lineWith(t, out, "lockscope"), "sentinel orders → "+newMaster)
	m.Update(masterMsg{addr: "127.0.0.1:7003", session: 7})
	mustNotContain(t, screen(m), "127.0.0.1:7003")
}

func TestGoldenSentinelSwitch120x30(t *testing.T) {
	golden.RequireEqual(t, sentinelModel(t, 120, 30).View().Content)
}
func TestGoldenSentinelSwitch100x30(t *testing.T) {
	golden.RequireEqual(t, sentinelModel(t, 100, 30).View().Content)
}
func TestGoldenSentinelSwitch60x15(t *testing.T) {
	golden.RequireEqual(t, sentinelModel(t, 60, 15).View().Content)
}

// After a failover of many locks the event log keeps the failover line in view: a pass logs
// jumpLinesPerPass fence-jump lines and counts the rest in one.
func TestFenceJumpLinesBoundedPerPass(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	const n = jumpLinesPerPass + 10
	var many []scanner.Lock
	for i := range n {
		l := orderAt(int64(100+i), t0)
		l.Key = "lock:many:" + itoa(int64(i))
		many = append(many, l)
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: many})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0}})
	switchMaster(m, oldMaster, newMaster)
	for i := range many {
		many[i].Fence += jumpedToken
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 3, Locks: many})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 3, Census: scanner.Census{FetchedAt: t0}})
	var lines []string
	for _, en := range m.events.entries {
		if en.kind == kindFenceJump {
			lines = append(lines, en.text)
		}
	}
	if len(lines) != jumpLinesPerPass+1 || lines[jumpLinesPerPass] != "10 more fence tokens jumped (⇡ in FENCE)" {
		t.Fatalf("%d fence-jump lines, the last %q", len(lines), lines[len(lines)-1])
	}
	if len(m.fence.marks) != n {
		t.Fatalf("%d locks marked, want all %d", len(m.fence.marks), n)
	}
}

// The reader of the sentinels' switches is re-armed after each switch of the session shown,
// and a new session's switches replace the old one's.
func TestMasterSwitchReaderReArmed(t *testing.T) {
	m, _ := newTestModel(t, 120, 30, onSentinel)
	ch := make(chan connect.MasterSwitch, 1)
	m.masterCh = ch
	_, cmd := m.Update(masterSwitchMsg{sw: connect.MasterSwitch{Name: "orders", From: oldMaster, To: newMaster, At: t0}})
	if cmd == nil {
		t.Fatal("no reader re-armed after a switch")
	}
	ch <- connect.MasterSwitch{Name: "orders", From: newMaster, To: oldMaster, At: t0}
	next, ok := cmd().(masterSwitchMsg)
	if !ok || next.sw.To != oldMaster || next.session != m.session {
		t.Fatalf("the re-armed reader gave %#v", next)
	}
	m.Update(next)
	mustContain(t, lineWith(t, screen(m), "lockscope"), "sentinel orders → "+oldMaster)
	close(ch)
	if _, ok := cmd().(masterClosedMsg); !ok {
		t.Fatal("a closed stream does not end its reader")
	}

	// `:context` to another Sentinel deployment: the old session's switches are dropped.
	newCh := make(chan connect.MasterSwitch)
	m.sessionSeq = 1
	m.Update(sessionMsg{seq: 1, session: Session{Target: sentinelTarget, Label: "context b"}, masterCh: newCh, end: func() {}})
	if m.masterCh != (<-chan connect.MasterSwitch)(newCh) || m.status.master != "" {
		t.Fatalf("after the session switch: master %q", m.status.master)
	}
	m.Update(masterSwitchMsg{sw: connect.MasterSwitch{Name: "orders", From: oldMaster, To: "127.0.0.1:7009"}, session: 0})
	mustNotContain(t, screen(m), "127.0.0.1:7009")
	m.Update(masterMsg{addr: "127.0.0.1:7010", session: 1})
	mustContain(t, lineWith(t, screen(m), "lockscope"), "sentinel  → 127.0.0.1:7010")
}

// A Redlock record's fence token is the highest of the instances read (each instance hands
// out its own, from its own clock): a pass that cannot read the instance holding the highest
// reads a lower one, and so does the next holder's record when it got the key on other
// instances. Neither is a token that went down: no ⇡, no line.
func TestFenceTokenOfPartialRedlockRecordNotMarkedDown(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	record := func(fence int64, missing bool) scanner.Lock {
		l := orderAt(fence, t0)
		l.Addr = ""
		in := func(addr string) scanner.Instance {
			return scanner.Instance{Addr: addr, Present: true, Value: l.Value, TTL: l.TTL}
		}
		q := &scanner.Quorum{Instances: []scanner.Instance{in("10.0.0.1:6379"), in("10.0.0.2:6379"), in("10.0.0.3:6379")},
			Agree: 3, Needed: 2, Total: 3, Reached: true}
		if missing {
			q.Instances[1] = scanner.Instance{Addr: "10.0.0.2:6379", Missing: true}
			q.Agree = 2
		}
		l.Quorum = q
		return l
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{record(1796026976406867, false)}})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0}})
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 3, Locks: []scanner.Lock{record(1796026976406012, true)}})
	out := screen(m)
	mustNotContain(t, out, "went DOWN")
	mustNotContain(t, lineWith(t, out, "lock:order:1001"), "⇡")
	// The same for the next holder, who got the key on the two instances with slower clocks.
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 4, Locks: []scanner.Lock{record(1796026976406867, false)}})
	next := record(1796026976406500, false)
	next.Quorum.Instances[0] = scanner.Instance{Addr: "10.0.0.1:6379"}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 5, Locks: []scanner.Lock{next}})
	mustNotContain(t, screen(m), "went DOWN")
}
