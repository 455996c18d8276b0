package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// rowOf is key's line on screen.
func rowOf(t *testing.T, scr, key string) string {
	t.Helper()
	for _, line := range strings.Split(scr, "\n") {
		if strings.Contains(line, key) {
			return line
		}
	}
	t.Fatalf("no row for %s:\n%s", key, scr)
	return ""
}

// TestStaleServerSaysHowOldAndDimsItsRows: once a server's heartbeats stop for longer than
// lateAfter, the status bar says how old its data is, counting, instead of "● live", and its
// rows are dimmed; its next answer clears both.
func TestStaleServerSaysHowOldAndDimsItsRows(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	const addr = "127.0.0.1:6379"
	feed(m, scanner.Update{Kind: scanner.UpdateClock, Addr: addr, Clock: scanner.ServerClock{Addr: addr, Answered: t0}})
	mustContain(t, screen(m), "● live")

	clk.advance(4*time.Second + 300*time.Millisecond)
	m.Update(tickMsg(clk.now()))
	scr := screen(m)
	mustContain(t, scr, "◌ stale 4s")
	mustNotContain(t, scr, "● live")
	late, _ := m.status.late(m.now)
	if !lateRow(m.locks.get("lock:order:1001"), late) {
		t.Error("a row of the server that stopped answering is not dimmed")
	}
	if plain := rowOf(t, m.View().Content, "lock:pay:55"); !strings.Contains(plain, "\x1b[2;") && !strings.Contains(plain, "\x1b[2m") {
		t.Errorf("row not drawn faint: %q", plain)
	}
	clk.advance(time.Second)
	m.Update(tickMsg(clk.now()))
	mustContain(t, screen(m), "◌ stale 5s")

	feed(m, scanner.Update{Kind: scanner.UpdateClock, Addr: addr, Clock: scanner.ServerClock{Addr: addr, Answered: clk.now()}})
	scr = screen(m)
	mustContain(t, scr, "● live")
	mustNotContain(t, scr, "stale")
	if late, _ := m.status.late(m.now); lateRow(m.locks.get("lock:order:1001"), late) {
		t.Error("the row is still dimmed after the server answered")
	}
}

// TestRedlockRowLateOnlyWithoutAnsweringQuorum: a Redlock record is dimmed when a quorum of its
// instances no longer answers, not for one instance down.
func TestRedlockRowLateOnlyWithoutAnsweringQuorum(t *testing.T) {
	l := &scanner.Lock{Key: "lock:r", Quorum: &scanner.Quorum{Needed: 2, Total: 3,
		Instances: []scanner.Instance{{Addr: "a"}, {Addr: "b"}, {Addr: "c"}}}}
	if lateRow(l, map[string]bool{"a": true}) {
		t.Error("dimmed with 2 of 3 instances answering")
	}
	if !lateRow(l, map[string]bool{"a": true, "c": true}) {
		t.Error("not dimmed with 1 of 3 instances answering")
	}
}

// TestAgesOnTheServersClock: a server whose clock is an hour behind the local one shows true
// ages (measured on its clock, the one locklib stamps values with), and a value stamped in the
// future of the server's clock shows "skew", not a negative age or 0ms.
func TestAgesOnTheServersClock(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	const addr = "127.0.0.1:6379"
	serverNow := t0.Add(-time.Hour)
	feed(m, scanner.Update{Kind: scanner.UpdateClock, Addr: addr, Clock: scanner.ServerClock{Addr: addr, Ahead: -time.Hour, Answered: t0}})
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: "lock:behind", Format: scanner.FormatLockscope, Type: "string", Node: "api-1",
			AcquiredAt: serverNow.Add(-30 * time.Second), TTL: time.Minute, FetchedAt: t0, Addr: addr},
		{Key: "lock:ahead", Format: scanner.FormatLockscope, Type: "string", Node: "api-2",
			AcquiredAt: serverNow.Add(time.Hour), TTL: time.Minute, FetchedAt: t0, Addr: addr},
	}})
	scr := screen(m)
	if row := rowOf(t, scr, "lock:behind"); !strings.Contains(row, " 30s ") || strings.Contains(row, "!") {
		t.Errorf("lock:behind: want age 30s on the server's clock, not stuck: %q", row)
	}
	if row := rowOf(t, scr, "lock:ahead"); !strings.Contains(row, " skew ") {
		t.Errorf("lock:ahead: want AGE skew: %q", row)
	}
	// The detail view measures the age on the same clock as the row, and the TTL on the local
	// one (PTTL is relative): an hour-behind server leaves the minute whole.
	selectKey(t, m, "lock:behind")
	typeKeys(m, "enter")
	if scr := screen(m); !strings.Contains(scr, "(30s ago)") || strings.Contains(scr, "clock skew") || !strings.Contains(scr, "1m00s left") {
		t.Errorf("lock:behind's details: want acquired 30s ago on the server's clock, 1m00s left:\n%s", scr)
	}
	typeKeys(m, "esc")
	// The status bar counts stuck locks on the same clock (on the local one, lock:behind has
	// been held an hour), and so does the is:stuck filter.
	if top := strings.SplitN(scr, "\n", 2)[0]; !strings.Contains(top, "stuck 0") {
		t.Errorf("status bar: want stuck 0 on the server's clock: %q", top)
	}
	typeKeys(m, "/", "is:stuck", "enter")
	if scr := screen(m); strings.Contains(scr, "lock:behind") {
		t.Errorf("is:stuck keeps lock:behind, held 30s on the server's clock:\n%s", scr)
	}
}

// TestFreshRowShowsNoMoreThanItWasReadWith: a record that arrives between two ticks is drawn
// against a clock no older than its read: a 2 s lock read just now shows 2.0s left and 0ms
// of age (the clock of the last tick made it 2.2s and -200ms).
func TestFreshRowShowsNoMoreThanItWasReadWith(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	clk.advance(200 * time.Millisecond) // no tick since
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: "lock:fresh", Format: scanner.FormatLockscope, Type: "string", Node: "api-1",
			AcquiredAt: clk.now(), TTL: 2 * time.Second, FetchedAt: clk.now(), Addr: "127.0.0.1:6379"},
	}})
	if row := rowOf(t, screen(m), "lock:fresh"); !strings.Contains(row, " 0ms ") || !strings.Contains(row, " 2.0s ") {
		t.Errorf("want age 0ms and TTL 2.0s: %q", row)
	}
}

// TestServerNoLongerFollowedIsForgotten: a server the scanner stops following (a cluster
// master gone after a failover) is not reported stale forever.
func TestServerNoLongerFollowedIsForgotten(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	const gone = "10.0.0.9:7000"
	feed(m, scanner.Update{Kind: scanner.UpdateClock, Addr: gone, Clock: scanner.ServerClock{Addr: gone, Answered: t0}})
	clk.advance(10 * time.Second)
	m.Update(tickMsg(clk.now()))
	mustContain(t, screen(m), "stale 10s")
	feed(m, scanner.Update{Kind: scanner.UpdateClock, Addr: gone})
	mustNotContain(t, screen(m), "stale")
}
