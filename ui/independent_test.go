package ui

import (
	"regexp"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// TestLockSetByServer: on independent servers a lock is its server and key: the same key on
// two servers is two rows, a gone record removes its server's row only, and hasKey finds a
// key on any server.
func TestLockSetByServer(t *testing.T) {
	s := newLockSet(true)
	s.apply([]scanner.Lock{
		{Key: "k", Addr: "a:1", Value: "va", TTL: time.Minute},
		{Key: "k", Addr: "b:1", Value: "vb", TTL: time.Minute},
		{Key: "other", Addr: "b:1", Value: "vo"},
	}, 1)
	if s.len() != 3 {
		t.Fatalf("%d rows, want 3 (k on two servers, other)", s.len())
	}
	if l := s.get(lockID("b:1", "k", true)); l == nil || l.Value != "vb" || l.Addr != "b:1" {
		t.Fatalf("k on b: %+v", l)
	}
	v := buildView(s.snapshot(), viewQuery{}, viewBuild{now: t0, stuckAfter: time.Hour, byServer: true})
	if len(v.rows) != 3 || v.indexOf(lockID("a:1", "k", true)) < 0 || v.indexOf(lockID("b:1", "k", true)) < 0 {
		t.Fatalf("view ids %q", v.rows)
	}
	s.apply([]scanner.Lock{{Key: "k", Addr: "a:1", Gone: true}}, 2)
	if s.get(lockID("a:1", "k", true)) != nil || s.get(lockID("b:1", "k", true)) == nil || !s.hasKey("k") {
		t.Fatal("a gone record on a removed b's lock too, or hasKey lost it")
	}
	if n := s.prune(2, nil); n != 2 || s.len() != 0 || s.hasKey("k") {
		t.Fatalf("prune dropped %d, %d left", n, s.len())
	}
	if got := goneLock(lockID("b:1", "k", true), true); got.Key != "k" || got.Addr != "b:1" || !got.Gone {
		t.Fatalf("goneLock: %+v", got)
	}
}

// TestStatusBarNamesIndependentServers: the status bar says how many independent servers the
// console watches, and which.
func TestStatusBarNamesIndependentServers(t *testing.T) {
	bar := statusBar{target: connect.Target{Mode: connect.Independent, Addrs: []string{"a:1", "b:2"}}}
	if got := bar.targetText(); got != "independent×2 a:1 b:2" {
		t.Fatalf("targetText %q", got)
	}
}

// TestEventWaitersNotGuessedOnIndependentServers: a locklib event does not say which server it
// came from; of independent servers the same key on two servers is two locks, so a waiter
// count learnt from an event would show on both rows. The event is logged, its count is not
// taken: W stays unknown where no server was read for it.
func TestEventWaitersNotGuessedOnIndependentServers(t *testing.T) {
	target := connect.Target{Mode: connect.Independent, Addrs: []string{"a:1", "b:1"}}
	m, _ := newTestModel(t, 120, 40, func(o *Options) { o.Target = target })
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{
		{Key: "lock:same", Addr: "a:1", Value: "va", TTL: time.Minute, FetchedAt: t0},
		{Key: "lock:same", Addr: "b:1", Value: "vb", TTL: time.Minute, FetchedAt: t0},
	}})
	m.Update(eventMsg{event: protocol.Event{Type: string(locklib.EventWaiting), Key: "lock:same", Node: "api-3", Waiters: 4, AtMs: t0.UnixMilli()}})
	mustContain(t, screen(m), "waiters=4") // logged
	for _, addr := range target.Addrs {
		if n, ok := waitersOf(m.locks.get(lockID(addr, "lock:same", true)), m.waiters); ok {
			t.Errorf("lock:same on %s shows %d waiters learnt from an event of either server", addr, n)
		}
	}
}

// TestReleaseDialogNamesTheServer: of independent servers the same key on two servers is two
// locks, so the dialog that asks to release one names its server, not just the key.
func TestReleaseDialogNamesTheServer(t *testing.T) {
	target := connect.Target{Mode: connect.Independent, Addrs: []string{"a:1", "b:1"}}
	m, _ := newTestModel(t, 120, 40, func(o *Options) { o.Target = target })
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{
		{Key: "lock:same", Addr: "a:1", Value: "va", TTL: 3 * time.Second, FetchedAt: t0},
		{Key: "lock:same", Addr: "b:1", Value: "vb", TTL: 3 * time.Second, FetchedAt: t0},
	}})
	selectKey(t, m, lockID("b:1", "lock:same", true))
	typeKeys(m, "d")
	if m.dialog == nil {
		t.Fatal("d opened no dialog")
	}
	if s := screen(m); !regexp.MustCompile(`server +b:1`).MatchString(s) {
		t.Fatalf("the dialog does not name the lock's server b:1:\n%s", s)
	}
}
