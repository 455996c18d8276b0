package scanner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
)

// TestWatchPassesAndHints: Watch first says how it follows changes, rows arrive in batches,
// each pass ends with PassDone, a deleted key is absent from the next pass, and between
// passes a locklib event or a keyspace notification makes Watch re-read the key at once.
func TestWatchPassesAndHints(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "w", 3000)
	s := New(target, Options{Interval: 300 * time.Millisecond, ConfigureNotifications: true})
	updates := s.Watch(ctx)

	// Pass 1: every key, then PassDone.
	start := time.Now()
	first := time.Duration(0)
	seen := map[string]bool{}
	next := func() Update {
		t.Helper()
		select {
		case u, ok := <-updates:
			if !ok {
				t.Fatal("watch closed early")
			}
			return u
		case <-time.After(20 * time.Second):
			t.Fatal("no update within 20s")
		}
		return Update{}
	}
	// First, before any row: how changes are followed (the option turned notifications on).
	if u := next(); u.Kind != UpdateFollowing || u.Following.Summary() != "notifications" {
		t.Fatalf("first update %v %+v, want following by notifications", u.Kind, u.Following)
	}
	for u := next(); u.Kind != UpdatePassDone; u = next() {
		if u.Kind == UpdateBatch {
			if first == 0 {
				first = time.Since(start)
			}
			if u.Gen != 1 {
				t.Fatalf("batch of gen %d during pass 1", u.Gen)
			}
			for _, l := range u.Locks {
				seen[l.Key] = true
			}
		}
	}
	if len(seen) != 3000 {
		t.Fatalf("pass 1 saw %d keys, want 3000", len(seen))
	}
	if first > 5*time.Second {
		t.Errorf("first rows after %v", first)
	}

	// Between passes: a new key (keyspace notification, enabled by the option) and an event.
	must(t, c.Set(ctx, "lock:w:new", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	must(t, c.Del(ctx, "lock:w:0000005").Err())
	ev, _ := json.Marshal(protocol.Event{Type: string(locklib.EventReleased), Key: "lock:w:0000005"})
	must(t, c.Publish(ctx, protocol.EventsChannel, ev).Err())

	sawNew, sawGone, pass2 := false, false, map[string]bool{}
	for u := next(); !(u.Kind == UpdatePassDone && u.Gen == 2); u = next() {
		if u.Kind != UpdateBatch {
			continue
		}
		for _, l := range u.Locks {
			if u.Gen == 1 && l.Key == "lock:w:new" && !l.Gone {
				sawNew = true
			}
			if u.Gen == 1 && l.Key == "lock:w:0000005" && l.Gone {
				sawGone = true
			}
			if u.Gen == 2 {
				pass2[l.Key] = true
			}
		}
	}
	if !sawNew || !sawGone {
		t.Errorf("hints between passes: new key seen %v, deleted key reported gone %v", sawNew, sawGone)
	}
	if len(pass2) != 3000 || pass2["lock:w:0000005"] || !pass2["lock:w:new"] {
		t.Errorf("pass 2: %d keys, deleted key present %v, new key present %v", len(pass2), pass2["lock:w:0000005"], pass2["lock:w:new"])
	}
}

// TestWatchClosesWithContext: the channel closes after cancel, leaving no goroutine behind.
func TestWatchClosesWithContext(t *testing.T) {
	_, c, target := startStandalone(t)
	loadLocks(t, c, "close", 10)
	ctx, cancel := contextWithCancel(t)
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	<-updates
	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-updates:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed 10s after cancel")
		}
	}
}
