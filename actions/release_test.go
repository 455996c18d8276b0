package actions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

const lockValue = "api-7:req-1:1700000000000:0123456789abcdef"

func TestReleaseDeletesOnlyTheExpectedValue(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "alice@ops"})

	mustSet(t, c, "lock:a", lockValue, time.Minute)
	res, err := a.Release(ctx, "lock:a", "someone-else", "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != ChangedHands || res.Current != lockValue {
		t.Fatalf("outcome %q current %q, want changed_hands with the holder's value", res.Outcome, res.Current)
	}
	if v, ok := redistest.Value(t, c, "lock:a"); !ok || v != lockValue {
		t.Fatalf("a mismatched release touched the key: %q %v", v, ok)
	}

	res, err = a.Release(ctx, "lock:a", lockValue, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Released || len(res.Instances) != 1 || res.Instances[0].Outcome != Released {
		t.Fatalf("result %+v, want released", res)
	}
	if _, ok := redistest.Value(t, c, "lock:a"); ok {
		t.Fatal("key still there after release")
	}

	res, err = a.Release(ctx, "lock:a", lockValue, "again")
	if err != nil || res.Outcome != AlreadyGone {
		t.Fatalf("second release: %q %v, want already_gone", res.Outcome, err)
	}
}

func TestReleaseLeavesTheFenceCounter(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	mustSet(t, c, "lock:f", lockValue, time.Minute)
	mustSet(t, c, protocol.FenceKey("lock:f"), "42", 0)
	if res, err := New(target, Options{}).Release(ctx, "lock:f", lockValue, ""); err != nil || res.Outcome != Released {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	if v, ok := redistest.Value(t, c, protocol.FenceKey("lock:f")); !ok || v != "42" {
		t.Fatalf("fence counter changed: %q %v", v, ok)
	}
}

func TestReleaseRefusesKeysThatAreNotLocks(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	c.RPush(ctx, "lock:list", "x")
	res, err := New(target, Options{}).Release(ctx, "lock:list", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != NotALock || res.Current != "list" {
		t.Fatalf("outcome %q current %q, want not_a_lock list", res.Outcome, res.Current)
	}
	if n := c.LLen(ctx, "lock:list").Val(); n != 1 {
		t.Fatalf("list touched: len %d", n)
	}
}

func TestReleaseBinaryAndHugeValues(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	binary := "\x00\xff\x1b[31m\n"
	huge := string(make([]byte, 1<<20)) + "tail"
	for _, v := range []string{binary, huge} {
		mustSet(t, c, "lock:v", v, time.Minute)
		// The same value with its last byte changed must not match.
		other := v[:len(v)-1] + "?"
		if res, err := a.Release(ctx, "lock:v", other, ""); err != nil || res.Outcome != ChangedHands {
			t.Fatalf("near-miss: %q %v", res.Outcome, err)
		}
		if res, err := a.Release(ctx, "lock:v", v, ""); err != nil || res.Outcome != Released {
			t.Fatalf("exact: %q %v", res.Outcome, err)
		}
	}
	// The audit record of the huge value is capped.
	for _, m := range auditEntries(t, c) {
		if seen := m.Values["seen"].(string); len(seen) > MaxAuditValue+32 {
			t.Fatalf("audit copied %d bytes of a value", len(seen))
		}
	}
}

func TestExtendComparesBeforePexpire(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	mustSet(t, c, "lock:e", lockValue, 10*time.Second)

	res, err := a.Extend(ctx, "lock:e", "stale", time.Hour, "")
	if err != nil || res.Outcome != ChangedHands {
		t.Fatalf("%q %v, want changed_hands", res.Outcome, err)
	}
	if ttl := c.PTTL(ctx, "lock:e").Val(); ttl > 10*time.Second {
		t.Fatalf("mismatched extend changed the TTL to %v", ttl)
	}

	res, err = a.Extend(ctx, "lock:e", lockValue, time.Hour, "deploy")
	if err != nil || res.Outcome != Extended || res.TTL != time.Hour {
		t.Fatalf("%+v %v, want extended", res, err)
	}
	if ttl := c.PTTL(ctx, "lock:e").Val(); ttl < 59*time.Minute {
		t.Fatalf("TTL after extend %v, want about 1h", ttl)
	}

	c.Del(ctx, "lock:e")
	if res, err := a.Extend(ctx, "lock:e", lockValue, time.Hour, ""); err != nil || res.Outcome != AlreadyGone {
		t.Fatalf("%q %v, want already_gone", res.Outcome, err)
	}
	if _, err := a.Extend(ctx, "lock:e", lockValue, 0, ""); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("ttl 0: %v, want ErrBadRequest", err)
	}
}

func TestHashLocksCompareExactly(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	c.HSet(ctx, "lock:r", owner, "2")
	c.PExpire(ctx, "lock:r", time.Minute)

	h, err := a.Peek(ctx, "lock:r")
	if err != nil {
		t.Fatal(err)
	}
	want := "hash{" + owner + "=2}"
	if h.Value != want || h.Instances[0].Type != "hash" {
		t.Fatalf("peek %q (%s), want %q", h.Value, h.Instances[0].Type, want)
	}
	// What the scanner shows converts to the same expected value.
	seen, err := scanner.New(target, scanner.Options{}).Get(ctx, "lock:r")
	if err != nil {
		t.Fatal(err)
	}
	if expect, err := ExpectFor(seen); err != nil || expect != want {
		t.Fatalf("ExpectFor(scanner record) = %q %v, want %q", expect, err, want)
	}

	// Another count, or an extra field: not the same hash.
	for _, stale := range []string{"hash{" + owner + "=1}", "hash{" + owner + "=2,x=1}", "hash{}", owner} {
		if res, err := a.Release(ctx, "lock:r", stale, ""); err != nil || res.Outcome != ChangedHands || res.Current != want {
			t.Fatalf("expect %q: %q %q %v, want changed_hands", stale, res.Outcome, res.Current, err)
		}
	}
	c.HSet(ctx, "lock:r", "other:2", "1")
	if res, _ := a.Release(ctx, "lock:r", want, ""); res.Outcome != ChangedHands {
		t.Fatalf("a hash with an extra field matched: %q", res.Outcome)
	}
	c.HDel(ctx, "lock:r", "other:2")

	if res, err := a.Extend(ctx, "lock:r", want, time.Hour, ""); err != nil || res.Outcome != Extended {
		t.Fatalf("extend: %q %v", res.Outcome, err)
	}
	if res, err := a.Release(ctx, "lock:r", want, ""); err != nil || res.Outcome != Released {
		t.Fatalf("release: %q %v", res.Outcome, err)
	}
	if c.Exists(ctx, "lock:r").Val() != 0 {
		t.Fatal("hash lock still there")
	}
}

func TestReadOnlyRefusesAndWritesNothing(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{ReadOnly: true})
	mustSet(t, c, "lock:ro", lockValue, time.Minute)
	if _, err := a.Release(ctx, "lock:ro", lockValue, ""); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("release: %v, want ErrReadOnly", err)
	}
	if _, err := a.Extend(ctx, "lock:ro", lockValue, time.Hour, ""); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("extend: %v, want ErrReadOnly", err)
	}
	if v, ok := redistest.Value(t, c, "lock:ro"); !ok || v != lockValue {
		t.Fatal("read-only release changed the key")
	}
	if c.Exists(ctx, DefaultAuditStream).Val() != 0 {
		t.Fatal("read-only mode wrote an audit record")
	}
	if _, err := a.Peek(ctx, "lock:ro"); err != nil {
		t.Fatalf("peek in read-only mode: %v", err)
	}
}

func TestScriptsSurviveScriptFlush(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	for i := 0; i < 2; i++ {
		mustSet(t, c, "lock:s", lockValue, time.Minute)
		if res, err := a.Release(ctx, "lock:s", lockValue, ""); err != nil || res.Outcome != Released {
			t.Fatalf("round %d: %q %v", i, res.Outcome, err)
		}
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCancelledContextIsAnErrorAndAudited(t *testing.T) {
	target, c, _ := standalone(t)
	mustSet(t, c, "lock:c", lockValue, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New(target, Options{}).Release(ctx, "lock:c", lockValue, "")
	if !errors.Is(err, context.Canceled) || res.Outcome != Failed {
		t.Fatalf("%q %v, want failed with context.Canceled", res.Outcome, err)
	}
	if _, ok := redistest.Value(t, c, "lock:c"); !ok {
		t.Fatal("key deleted by a cancelled release")
	}
	entries := auditEntries(t, c)
	if len(entries) != 1 || entries[0].Values["result"] != string(Failed) || entries[0].Values["error"] == "" {
		t.Fatalf("audit of a failed attempt: %+v", entries)
	}
}

func TestScriptPermissionErrorNamesTheCommand(t *testing.T) {
	target, c, s := standalone(t)
	ctx := testCtx(t)
	for user, denied := range map[string]string{"nodel": "-del", "nopexpire": "-pexpire"} {
		if err := c.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", denied).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(t, c, "lock:p", lockValue, time.Minute)
	for _, tc := range []struct {
		user, command string
		act           func(a *Admin) (Result, error)
	}{
		{"nodel", "DEL", func(a *Admin) (Result, error) { return a.Release(ctx, "lock:p", lockValue, "") }},
		{"nopexpire", "PEXPIRE", func(a *Admin) (Result, error) { return a.Extend(ctx, "lock:p", lockValue, time.Hour, "") }},
	} {
		limited := s.Client(func(o *redis.Options) { o.Username, o.Password = tc.user, "pw" })
		a := New(connect.Target{Clients: []redis.UniversalClient{limited}, Addrs: target.Addrs}, Options{})
		_, err := tc.act(a)
		var perm *ScriptPermissionError
		if !errors.As(err, &perm) || perm.Command != tc.command {
			t.Errorf("%s: %v, want a ScriptPermissionError naming %s", tc.user, err, tc.command)
		}
	}
	if v, ok := redistest.Value(t, c, "lock:p"); !ok || v != lockValue {
		t.Fatal("lock changed")
	}
}

// A re-entrant locklib lock keeps its levels (protocol.LevelsKey) as long as the key: an
// operator's extend moves both, and the holder's levels still release after the old TTL.
func TestExtendAndReleaseKeepAReentrantLocksLevels(t *testing.T) {
	target, c, srv := standalone(t)
	ctx := testCtx(t)
	lc := locklib.New(c)
	defer lc.Close()
	outer, err := lc.Obtain(ctx, "lock:levels", 300*time.Millisecond, locklib.Reentrant("job"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := lc.Obtain(ctx, "lock:levels", 300*time.Millisecond, locklib.Reentrant("job"))
	if err != nil {
		t.Fatal(err)
	}
	// A user who may not write the levels key (an ACL on lock:* only) is refused: extending
	// the key alone would leave the levels to expire under it.
	la := adminAs(t, ctx, c, srv, target, "locksonly", "~lock:*", "&*", "+@all")
	if res, _ := la.Extend(ctx, "lock:levels", inner.Value(), time.Minute, "stuck job"); res.Outcome != Failed ||
		res.Instances[0].Err == nil || !strings.Contains(res.Instances[0].Err.Error(), "re-entrant") {
		t.Fatalf("extend without access to the levels: %+v, want failed, saying why", res)
	}
	if ttl := c.PTTL(ctx, "lock:levels").Val(); ttl > time.Second {
		t.Fatalf("the refused extend changed the TTL to %v", ttl)
	}
	a := New(target, Options{})
	if res, err := a.Extend(ctx, "lock:levels", inner.Value(), time.Minute, "stuck job"); err != nil || res.Outcome != Extended {
		t.Fatalf("%+v %v", res, err)
	}
	if ttl := c.PTTL(ctx, protocol.LevelsKey("lock:levels")).Val(); ttl < 59*time.Second {
		t.Fatalf("the levels set lives %v after an extend to 1m", ttl)
	}
	time.Sleep(400 * time.Millisecond) // past the TTL the levels were taken with
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner level after the extend: %v", err)
	}
	if res, err := a.Release(ctx, "lock:levels", strings.TrimSuffix(inner.Value(), ":2")+":1", "stuck"); err != nil || res.Outcome != Released {
		t.Fatalf("%+v %v", res, err)
	}
	if c.Exists(ctx, protocol.LevelsKey("lock:levels")).Val() != 0 {
		t.Fatal("a force-release left the levels set")
	}
	if err := outer.Release(ctx); !errors.Is(err, locklib.ErrNotHeld) {
		t.Fatalf("outer level after a force-release: %v, want ErrNotHeld", err)
	}
}
