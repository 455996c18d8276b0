package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

// The TUI releases exactly what the census showed, for the values whose displayed form is
// not the stored one: a Redisson hash, and a string longer than scanner.ValueCap. A value
// that changed after the census is never released.
func TestReleaseCmdUsesExactValue(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	long := strings.Repeat("x", scanner.ValueCap+100)
	if err := rdb.HSet(ctx, "lock:hash", "b7a1c2d4-1111-2222-3333-444455556666:1", 2).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, "lock:long", long, 0)
	rdb.Set(ctx, "lock:moved", long, 0)

	target := connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{srv.Addr}}
	census, err := scanner.New(target, scanner.Options{}).Census(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// lock:moved changes hands after the operator saw it.
	rdb.Set(ctx, "lock:moved", "new-owner:"+long, 0)

	admin := actions.New(target, actions.Options{Operator: "test"})
	want := map[string]actions.Outcome{"lock:hash": actions.Released, "lock:long": actions.Released, "lock:moved": actions.ChangedHands}
	for i := range census.Locks {
		seen := &census.Locks[i]
		msg := releaseCmd(ctx, admin, 1, seen, "test")().(actionDoneMsg)
		if msg.err != nil || msg.result.Outcome != want[seen.Key] {
			t.Errorf("%s: outcome %q err %v, want %q", seen.Key, msg.result.Outcome, msg.err, want[seen.Key])
		}
	}
	if n := rdb.Exists(ctx, "lock:hash", "lock:long").Val(); n != 0 {
		t.Errorf("%d of the released keys still exist", n)
	}
	if rdb.Exists(ctx, "lock:moved").Val() != 1 {
		t.Error("the lock that changed hands was deleted")
	}
}

// The extend the dialog sends shortens a lock only when the operator confirmed it (the
// dialog's second question): otherwise the server refuses and nothing changes.
func TestExtendCmdShortensOnlyWhenConfirmed(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	// 59m30s, so that the time left reads 59m whether Redis answers in the same millisecond or not.
	if err := rdb.Set(ctx, "lock:long", "api-1:-:1764400000123:0123456789abcdef", 59*time.Minute+30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	seen, admin := seenOn(t, srv, rdb, "lock:long")
	msg := extendCmd(ctx, admin, 1, &seen, 30*time.Second, false, "test")().(actionDoneMsg)
	if msg.result.Outcome != actions.WouldShorten || rdb.PTTL(ctx, "lock:long").Val() < 59*time.Minute {
		t.Fatalf("unconfirmed: outcome %q (err %v), TTL %v: want would_shorten and the hour kept", msg.result.Outcome, msg.err, rdb.PTTL(ctx, "lock:long").Val())
	}
	// Said in words: the lock may have been renewed since the dialog opened.
	if text, bad := resultText(msg, time.Now(), func(s string) string { return s }); !bad ||
		!strings.HasPrefix(text, "NOT extended: lock:long has 59m") || !strings.Contains(text, "more than 30s") {
		t.Errorf("the notice of a refused shortening: %q", text)
	}
	msg = extendCmd(ctx, admin, 2, &seen, 30*time.Second, true, "test")().(actionDoneMsg)
	if ttl := rdb.PTTL(ctx, "lock:long").Val(); msg.result.Outcome != actions.Extended || ttl > 30*time.Second {
		t.Fatalf("confirmed: outcome %q (err %v), TTL %v: want extended to 30s", msg.result.Outcome, msg.err, ttl)
	}
}

// An action that stops before its script, because the value the operator saw cannot be
// compared exactly, is in the audit trail too (failed, with why), as the CLI records it.
func TestActionCmdThatCannotCompareIsAudited(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	if err := rdb.HSet(ctx, "lock:ambiguous", "a=b", "c", "a", "b=c").Err(); err != nil { // both read "a=b=c"
		t.Fatal(err)
	}
	seen, admin := seenOn(t, srv, rdb, "lock:ambiguous")
	release := releaseCmd(ctx, admin, 1, &seen, "INC-9")().(actionDoneMsg)
	extend := extendCmd(ctx, admin, 2, &seen, time.Minute, false, "INC-9")().(actionDoneMsg)
	if release.err == nil || extend.err == nil || rdb.Exists(ctx, "lock:ambiguous").Val() != 1 {
		t.Fatalf("an inexact value was acted on: %v, %v", release.err, extend.err)
	}
	recs, err := admin.Audit(ctx, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d audit records (%v), want 2", len(recs), err)
	}
	for _, r := range recs {
		if r.Result != actions.Failed || r.Key != "lock:ambiguous" || r.Reason != "INC-9" || !strings.Contains(r.Error, "ambiguous") {
			t.Errorf("record %+v", r)
		}
	}
}

// seenOn is key as the console reads it from srv (rdb, its client), and an admin acting on srv.
func seenOn(t *testing.T, srv *redistest.Server, rdb redis.UniversalClient, key string) (scanner.Lock, *actions.Admin) {
	t.Helper()
	target := connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{srv.Addr}}
	seen, err := scanner.New(target, scanner.Options{}).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return seen, actions.New(target, actions.Options{Operator: "test"})
}
