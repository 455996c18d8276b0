package locklib

// Regression tests for the ways an outside review found to get two holders at once, or a
// lock held by nobody for a whole TTL. Each builds its fault on purpose with real servers and
// redistest.Faults (a reply lost after the server ran the request, so go-redis sends it
// again; a reply held back; a request lost), and failed before the fix it is named after
// (docs/guarantees.md lists them with the promise each one checks).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// faulty is a server and a Client on it whose connections go through a fault injector.
type faulty struct {
	srv    *redistest.Server
	faults *redistest.Faults
	c      *Client
	rdb    *redis.Client
}

// newFaulty starts a server and makes a Client on it through faults, with every script
// loaded (a rule meant for a script's EVALSHA must not hit its first NOSCRIPT round).
func newFaulty(t *testing.T, opts ...func(*redis.Options)) faulty {
	t.Helper()
	fx := faulty{srv: redistest.Start(t), faults: redistest.NewFaults(1)}
	loadScripts(t, fx.srv.Client())
	fx.rdb = fx.srv.Client(append([]func(*redis.Options){fx.faults.Options}, opts...)...)
	fx.c = New(fx.rdb, WithNode("test"))
	t.Cleanup(func() { _ = fx.c.Close() })
	return fx
}

func loadScripts(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	if err := loadLibrary(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
	for _, s := range serverScripts {
		if err := s.Load(context.Background(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// isScript matches a call of script s, as a function or as a script.
func isScript(s *serverScript) func(cmd []string) bool {
	return func(cmd []string) bool {
		return len(cmd) > 1 && (cmd[0] == "evalsha" && cmd[1] == s.Hash() || cmd[0] == "fcall" && cmd[1] == s.function)
	}
}

// isEvalSHA matches a call of script s as a script (Redlock's own scripts run only so).
func isEvalSHA(s *redis.Script) func(cmd []string) bool {
	return func(cmd []string) bool { return len(cmd) > 1 && cmd[0] == "evalsha" && cmd[1] == s.Hash() }
}

// isScriptWith matches a call of script s one of whose arguments contains arg.
func isScriptWith(s *serverScript, arg string) func(cmd []string) bool {
	withArg := redistest.ScriptWithArg(arg)
	return func(cmd []string) bool { return isScript(s)(cmd) && withArg(cmd) }
}

// mustNotObtain fails when another client can take key: it is still held.
func mustNotObtain(t *testing.T, c *Client, key, why string) {
	t.Helper()
	if l, err := c.TryObtain(context.Background(), key, time.Second); !errors.Is(err, ErrNotObtained) {
		if l != nil {
			_ = l.Release(context.Background())
		}
		t.Fatalf("another client could take %s (%v): %s", key, err, why)
	}
}

// mustBeFreeWithin fails unless key is gone within d (a lock left held for nobody).
func mustBeFreeWithin(t *testing.T, rdb *redis.Client, key string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for rdb.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			v, _ := redistest.Value(t, rdb, key)
			t.Fatalf("%s still holds %q %v later (PTTL %v): held for nobody", key, v, d, rdb.PTTL(context.Background(), key).Val())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Defect 1: a re-entrant level with a short TTL and a watchdog (or a short Refresh) set the
// shared key's TTL to its own, below what the outer level's deadline relied on.
func TestInnerLevelNeverShortensTheKey(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:shared-levels"
	outer := mustObtain(t, c, ctx, key, 30*time.Second, Reentrant("job"))
	inner := mustObtain(t, c, ctx, key, 300*time.Millisecond, Reentrant("job"), WithWatchdog())
	time.Sleep(250 * time.Millisecond) // the inner watchdog renews (every 100 ms)
	if err := inner.Refresh(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 25*time.Second {
		t.Fatalf("the inner level shortened the key to %v; the outer level relies on ~30s", pttl)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if outer.Err() != nil {
		t.Fatalf("outer level lost: %v", outer.Err())
	}
	mustNotObtain(t, other, key, "the outer level still holds it")
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Defect 2, a re-entrant release run twice by the server: the count went from 3 to 1.
func TestReentrantReleaseRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	other, _ := newTestClient(t, fx.srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:release-twice"
	outer := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	mid := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	inner := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	fired := f.DropReply(isScript(scriptRelease))
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("a release whose first reply was lost: %v, want nil", err)
	}
	<-fired
	if v, _ := redistest.Value(t, rdb, key); !strings.HasSuffix(v, ":2") {
		t.Fatalf("after one release of three levels the key holds %q, want count 2", v)
	}
	if err := mid.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustNotObtain(t, other, key, "the outer level still holds it")
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustBeFreeWithin(t, rdb, key, 0)
}

// Defect 2, a re-entry run twice: the count went up by two, and the key outlived the last
// release by its TTL.
func TestReentryRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:reenter-twice"
	outer := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	fired := f.DropReply(isScript(scriptAcquire))
	inner := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	<-fired
	if v, _ := redistest.Value(t, rdb, key); !strings.HasSuffix(v, ":2") || !strings.HasSuffix(inner.Value(), ":2") {
		t.Fatalf("one re-entry stored %q (the Lock says %q), want count 2", v, inner.Value())
	}
	for _, l := range []*Lock{inner, outer} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustBeFreeWithin(t, rdb, key, 0)
}

// Defect 2, a TryObtain run twice: the second copy saw its own value and reported the lock
// taken by someone else, while that value held the key for the TTL.
func TestTryObtainRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:try-twice"
	fired := f.DropReply(isScript(scriptAcquire))
	l, err := c.TryObtain(ctx, key, 10*time.Second)
	<-fired
	if err != nil {
		v, _ := redistest.Value(t, rdb, key)
		t.Fatalf("TryObtain whose first reply was lost: %v, while the key holds %q", err, v)
	}
	if v, _ := redistest.Value(t, rdb, key); v != l.Value() || l.Token() == 0 {
		t.Fatalf("the key holds %q, the Lock %q with token %d", v, l.Value(), l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustBeFreeWithin(t, rdb, key, 0)
}

// Defect 2, a plain release run twice: the second copy reported ErrNotHeld for a success.
func TestReleaseRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:release-plain-twice"
	l := mustObtain(t, c, ctx, key, 10*time.Second)
	fired := f.DropReply(isScript(scriptRelease))
	if err := l.Release(ctx); err != nil {
		t.Fatalf("a release whose first reply was lost: %v, want nil", err)
	}
	<-fired
	mustBeFreeWithin(t, rdb, key, 0)
}

// Defect 3: Refresh(10s) and Refresh(500ms) ran in that order, but the 10 s reply was read
// last: the Lock kept 10 s of validity while the key had 500 ms.
func TestConcurrentRefreshesAnsweredOutOfOrder(t *testing.T) {
	fx := newFaulty(t)
	c, f := fx.c, fx.faults
	other, _ := newTestClient(t, fx.srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:refresh-order"
	l := mustObtain(t, c, ctx, key, 2*time.Second)
	release := make(chan struct{})
	held := f.HoldReply(isScriptWith(scriptRefresh, "10000"), release)
	long := make(chan error, 1)
	go func() { long <- l.Refresh(ctx, 10*time.Second) }()
	<-held
	redistest.Eventually(t, "the 10 s refresh ran", func() bool { d, _ := l.TTL(ctx); return d > 5*time.Second })
	if err := l.Refresh(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-long; err != nil {
		t.Fatal(err)
	}
	time.Sleep(900 * time.Millisecond)
	if l.Err() == nil {
		mustNotObtain(t, other, key, "the Lock has no Err(): its deadline says it still holds the key")
	}
	_ = l.Release(ctx)
}

// Defect 4: a waiter whose attempt failed on a backend error stayed queued, a release of its
// own Client handed it the lock, and nobody released it: held for the waiter's whole TTL.
func TestWaiterThatFailedIsNotHandedTheLock(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:handoff-orphan"
	holder := mustObtain(t, c, ctx, key, 20*time.Second)
	waiter := make(chan error, 1)
	go func() {
		_, err := c.Obtain(ctx, key, 20*time.Second, WithTrace("the-waiter"))
		waiter <- err
	}()
	redistest.Eventually(t, "the waiter queued", func() bool { return rdb.ZCard(ctx, protocol.WaitQueueKey(key)).Val() == 1 })
	// Its next attempt fails: every copy go-redis sends is lost.
	for range 4 {
		f.LoseRequest(isScriptWith(scriptAcquire, "the-waiter"))
	}
	if err := <-waiter; !errors.Is(err, ErrBackend) {
		t.Fatalf("waiter: %v, want ErrBackend", err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustBeFreeWithin(t, rdb, key, time.Second)
}

// Defect 5: an Obtain whose context ended while its acquire reply was on its way left its
// value (re-entrant: not cleaned up at all; TryObtain: never cleaned up) for the TTL. With
// default client options the Obtain did not even return at its deadline.
func TestObtainCancelledWhileItsAcquireIsOnItsWay(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []LockOption
		try  bool
	}{
		{"reentrant Obtain", []LockOption{Reentrant("job")}, false},
		{"plain Obtain", nil, false},
		{"TryObtain", nil, true},
	} {
		for _, ctxTimeouts := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, ContextTimeoutEnabled %v", tc.name, ctxTimeouts), func(t *testing.T) {
				fx := newFaulty(t, func(o *redis.Options) { o.ContextTimeoutEnabled = ctxTimeouts })
				c, rdb, f := fx.c, fx.rdb, fx.faults
				const key = "lock:cancelled"
				release := make(chan struct{})
				defer close(release)
				f.HoldReply(isScriptWith(scriptAcquire, "cancelled"), release)
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				obtain := c.Obtain
				if tc.try {
					obtain = c.TryObtain
				}
				begin := time.Now()
				l, err := obtain(ctx, key, 20*time.Second, append(tc.opts, WithTrace("cancelled"))...)
				if err == nil {
					_ = l.Release(context.Background())
					t.Fatal("Obtain returned a lock after its context ended")
				}
				if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want ErrNotObtained and the context's error", err)
				}
				if took := time.Since(begin); took > time.Second {
					t.Fatalf("Obtain returned %v after it began: its context ended after 200ms", took)
				}
				mustBeFreeWithin(t, rdb, key, time.Second)
			})
		}
	}
}

// Defect 6, Redlock: a SET NX sent again after a lost reply found our own key and counted as
// refused; the undo and the release skipped that instance, which kept our value for the TTL.
func TestRedlockSetRunTwice(t *testing.T) {
	faults := redistest.NewFaults(1)
	fx := &redlockFixture{servers: redistest.StartN(t, 3)}
	for _, s := range fx.servers {
		fx.clients = append(fx.clients, s.Client(faults.Options))
	}
	fx.warmUp(t)
	c := fx.client(t)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:set-twice"
	for range 3 { // every instance loses its first reply
		faults.DropReply(func(cmd []string) bool { return cmd[0] == "set" && cmd[1] == key })
	}
	l, err := c.TryObtain(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatalf("TryObtain whose SETs were sent twice: %v (held on %d of 3)", err, fx.present(t, key))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the key gone from every instance", func() bool { return fx.present(t, key) == 0 })
}

// Defect 6, Redlock: a re-entrant release run twice took two levels on that instance.
func TestRedlockReentrantReleaseRunTwice(t *testing.T) {
	faults := redistest.NewFaults(1)
	fx := &redlockFixture{servers: redistest.StartN(t, 3)}
	for _, s := range fx.servers {
		fx.clients = append(fx.clients, s.Client(faults.Options))
	}
	fx.warmUp(t)
	c := fx.client(t)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:release-twice"
	outer := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	inner := mustObtain(t, c, ctx, key, 10*time.Second, Reentrant("job"))
	for range 3 {
		faults.DropReply(isEvalSHA(scriptRedlockRelease))
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	base := protocol.BaseOf(outer.Value())
	redistest.Eventually(t, "count 1 on every instance", func() bool { return fx.holders(t, key, base+":1") == 3 })
	time.Sleep(50 * time.Millisecond) // any late copy lands
	if n := fx.holders(t, key, base+":1"); n != 3 {
		t.Fatalf("after one release of two levels only %d of 3 instances hold count 1", n)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Defect 7: Release's 2 s bound reached the socket only with ContextTimeoutEnabled; with
// default options a release against a frozen server took ReadTimeout per try (~10 s).
// With a watchdog, Release first waits for a renewal in flight (ttl/3 at most); the watchdog
// must not be held up either, by the renew_failed event it publishes (found by TestHistory).
func TestReleaseBoundWithDefaultOptions(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	ctx := testCtx(t, 30*time.Second)
	l := mustObtain(t, c, ctx, "lock:frozen", 10*time.Second)
	dog := mustObtain(t, c, ctx, "lock:frozen-watchdog", 300*time.Millisecond, WithWatchdog())
	srv.Pause()
	defer srv.Resume()
	time.Sleep(250 * time.Millisecond) // a renewal failed, and its event is on its way
	for _, l := range []*Lock{l, dog} {
		begin := time.Now()
		err := l.Release(ctx)
		took := time.Since(begin)
		if !errors.Is(err, ErrBackend) {
			t.Fatalf("Release against a frozen server: %v, want ErrBackend", err)
		}
		if bound := releaseTimeout + l.ttl/3 + 300*time.Millisecond; took > bound {
			t.Fatalf("Release took %v, want at most %v", took, bound)
		}
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if _, err := l.TTL(short); err == nil || time.Since(begin) > time.Second {
		t.Fatalf("TTL with a 200ms context: %v after %v", err, time.Since(begin))
	}
}

// Defect 8: a script that failed after its first write left it: with the fence counter of
// the wrong type, TryObtain returned ErrBackend and the lock key stayed set for its TTL. Every
// script, on every path, with each companion key of the wrong type: either it succeeds
// without touching that key, or it fails with ErrBackend and changes nothing.
func TestFailedScriptWritesNothing(t *testing.T) {
	companions := map[string]func(string) string{"fence": protocol.FenceKey, "queue": protocol.WaitQueueKey,
		"presence": protocol.WaitPresenceKey, "levels": protocol.LevelsKey, "ended": protocol.EndedKey}
	// Each path prepares the key (before the companion is broken) and then runs the call.
	paths := map[string]wrongTypePath{
		"TryObtain": {nil, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtain(context.Background(), key, 10*time.Second))
		}},
		"TryObtain re-entrant": {nil, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtain(context.Background(), key, 10*time.Second, Reentrant("job")))
		}},
		"re-entry": {func(t *testing.T, c *Client, key string) *Lock {
			return mustObtain(t, c, context.Background(), key, 10*time.Second, Reentrant("job"))
		}, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtain(context.Background(), key, 10*time.Second, Reentrant("job")))
		}},
		"Obtain behind a holder": {func(t *testing.T, c *Client, key string) *Lock {
			return mustObtain(t, c, context.Background(), key, 10*time.Second)
		}, func(c *Client, key string, _ *Lock) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			return tryAndRelease(c.Obtain(ctx, key, 10*time.Second))
		}},
		"Release": {func(t *testing.T, c *Client, key string) *Lock {
			return mustObtain(t, c, context.Background(), key, 10*time.Second)
		}, func(_ *Client, _ string, held *Lock) error { return held.Release(context.Background()) }},
		"Release re-entrant": {func(t *testing.T, c *Client, key string) *Lock {
			return mustObtain(t, c, context.Background(), key, 10*time.Second, Reentrant("job"))
		}, func(_ *Client, _ string, held *Lock) error { return held.Release(context.Background()) }},
		"TryObtainMulti": {nil, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtainMulti(context.Background(), []string{key + ":other", key}, 10*time.Second))
		}},
		"Release multi": {func(t *testing.T, c *Client, key string) *Lock {
			l, err := c.ObtainMulti(context.Background(), []string{key + ":other", key}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, func(_ *Client, _ string, held *Lock) error { return held.Release(context.Background()) }},
	}
	checkWrongTypeCompanions(t, "lock:wrong-type:", companions, paths)
}

// wrongTypePath is one script path of checkWrongTypeCompanions: prepare sets the key up
// before the companion is broken (nil: nothing to set up), call runs the path.
type wrongTypePath struct {
	prepare func(t *testing.T, c *Client, key string) *Lock
	call    func(c *Client, key string, held *Lock) error
}

// checkWrongTypeCompanions runs every path on a key of its own with each companion turned
// into a hash (checkWroteNothing): the key and its companions (lockKeys) are compared.
func checkWrongTypeCompanions(t *testing.T, prefix string, companions map[string]func(string) string, paths map[string]wrongTypePath) {
	t.Helper()
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	n := 0
	for pathName, path := range paths {
		for name, companion := range companions {
			n++
			key := fmt.Sprintf("%s%d", prefix, n)
			var held *Lock
			if path.prepare != nil {
				held = path.prepare(t, c, key)
			}
			rdb.Del(context.Background(), companion(key))
			rdb.HSet(context.Background(), companion(key), "f", "v")
			checkWroteNothing(t, pathName+" with "+name+" a hash", func() error { return path.call(c, key, held) },
				func() string { return snapshot(t, rdb, lockKeys(key)[:5]...) })
		}
	}
}

// checkWroteNothing runs call, made with a key of the wrong type: it must either succeed
// without that key (no error, or not obtained) or fail with ErrBackend and leave what
// snapshot reads as it was.
func checkWroteNothing(t *testing.T, what string, call func() error, snapshot func() string) {
	t.Helper()
	before := snapshot()
	err := call()
	if err == nil || errors.Is(err, ErrNotObtained) && !errors.Is(err, ErrBackend) {
		return // it did not need the broken key
	}
	if !errors.Is(err, ErrBackend) {
		t.Errorf("%s: %v, want ErrBackend", what, err)
	}
	if after := snapshot(); after != before {
		t.Errorf("%s failed (%v) but changed the keys:\n%s\nto\n%s", what, err, before, after)
	}
}

// tryAndRelease releases what an Obtain got and returns its error.
func tryAndRelease(l *Lock, err error) error {
	if l != nil {
		_ = l.Release(context.Background())
	}
	return err
}

// snapshot is the content of keys (DUMP: the value without the TTL); the callers leave out
// the ended set, where a failed Obtain's clean-up records it.
func snapshot(t *testing.T, rdb *redis.Client, keys ...any) string {
	t.Helper()
	var sb strings.Builder
	for _, k := range keys {
		d, err := rdb.Dump(context.Background(), k.(string)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "%s=%q\n", k, d)
	}
	return sb.String()
}

// The tests below come from an adversarial review of the fix: each failed on its first
// version.

// fillMemory writes big keys until the server refuses a write for being out of memory, and
// keeps it there.
func fillMemory(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	big := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		err := rdb.Set(ctx, fmt.Sprintf("filler:%d", i), big, 0).Err()
		if err != nil {
			if !strings.Contains(err.Error(), "OOM") {
				t.Fatal(err)
			}
			if err := rdb.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if i > 10000 {
			t.Fatal("never out of memory")
		}
	}
}

// A server out of memory (noeviction) refuses a script's writes that grow memory, but not
// DEL or SREM: a release still releases (plain and re-entrant), and the clean-up of a failed
// Obtain still cleans up. Recording the operation as ended is then skipped, not fatal.
func TestReleaseUnderMemoryPressure(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory", "3mb", "--maxmemory-policy", "noeviction"))
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	plain := mustObtain(t, c, ctx, "lock:oom", 30*time.Second)
	outer := mustObtain(t, c, ctx, "lock:oom-re", 30*time.Second, Reentrant("job"))
	inner := mustObtain(t, c, ctx, "lock:oom-re", 30*time.Second, Reentrant("job"))
	fillMemory(t, rdb)
	if err := plain.Release(ctx); err != nil {
		t.Errorf("plain Release under OOM: %v (PTTL now %v)", err, rdb.PTTL(ctx, "lock:oom").Val())
	}
	for _, l := range []*Lock{inner, outer} { // the count shown in the value lags: best effort
		if err := l.Release(ctx); err != nil {
			t.Errorf("re-entrant Release under OOM: %v", err)
		}
	}
	for _, key := range []string{"lock:oom", "lock:oom-re"} {
		mustBeFreeWithin(t, rdb, key, 0)
	}
}

func TestCleanUpUnderMemoryPressure(t *testing.T) {
	fx := newFaulty(t)
	admin := fx.srv.Client()
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	const key = "lock:oom-leave"
	release := make(chan struct{})
	defer close(release)
	held := fx.faults.HoldReply(isScriptWith(scriptAcquire, "oom-leave"), release)
	obtainCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel() // the Obtain gives up once memory is full
		<-held         // the acquire ran: the key is ours
		if err := admin.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
			t.Error(err)
		}
		fillMemory(t, admin)
	}()
	if _, err := fx.c.Obtain(obtainCtx, key, 30*time.Second, WithTrace("oom-leave")); err == nil {
		t.Fatal("obtained")
	}
	mustBeFreeWithin(t, admin, key, time.Second)
}

// A re-entrant Obtain that queued behind another owner and then entered because its own owner
// took the key meanwhile leaves its queue entry: the key is free to others once released.
func TestReentryThroughTheQueueLeavesNoEntry(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv, WithBackoff(5*time.Millisecond, 2*time.Second))
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 30*time.Second)
	const key = "lock:reentry-queue"
	blocker := mustObtain(t, other, ctx, key, 10*time.Second)
	type result struct {
		l   *Lock
		err error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() { l, err := c.Obtain(ctx, key, 10*time.Second, Reentrant("job")); first <- result{l, err} }()
	redistest.Eventually(t, "first queued", func() bool { return rdb.ZCard(ctx, protocol.WaitQueueKey(key)).Val() == 1 })
	go func() { l, err := c.Obtain(ctx, key, 10*time.Second, Reentrant("job")); second <- result{l, err} }()
	redistest.Eventually(t, "second queued", func() bool { return rdb.ZCard(ctx, protocol.WaitQueueKey(key)).Val() == 2 })
	if err := blocker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := <-first, <-second
	if a.err != nil || b.err != nil {
		t.Fatal(a.err, b.err)
	}
	for _, l := range []*Lock{b.l, a.l} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l, err := other.TryObtain(ctx, key, time.Second)
	if err != nil {
		t.Fatalf("the key is free and nobody waits, but TryObtain: %v (queue %q)", err, rdb.ZRange(ctx, protocol.WaitQueueKey(key), 0, -1).Val())
	}
	_ = l.Release(ctx)
}

// An acquire whose answer comes after the lock's TTL ran out must not return a Lock: by then
// the key may be someone else's. The Obtain lets it go and goes on waiting.
func TestObtainNeverReturnsAnExpiredLock(t *testing.T) {
	fx := newFaulty(t)
	other, _ := newTestClient(t, fx.srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:late-reply"
	release := make(chan struct{})
	fx.faults.HoldReply(isScriptWith(scriptAcquire, "late-reply"), release)
	taken := make(chan *Lock, 1)
	go func() {
		time.Sleep(150 * time.Millisecond) // the key (ttl 100 ms) ran out
		l, err := other.Obtain(ctx, key, time.Second)
		if err != nil {
			t.Error(err)
		}
		taken <- l
		close(release)
	}()
	l, err := fx.c.Obtain(ctx, key, 100*time.Millisecond, WithTrace("late-reply"))
	byOther := <-taken
	if err != nil {
		t.Fatal(err)
	}
	if !byOther.acquiredAt.Before(l.acquiredAt) || l.Err() != nil || !time.Now().Before(lockDeadline(l)) {
		t.Fatalf("Obtain returned a Lock whose deadline %v had passed (Err %v)", lockDeadline(l), l.Err())
	}
	if v, _ := redistest.Value(t, fx.rdb, key); v != l.Value() {
		t.Fatalf("the key holds %q, the Lock %q", v, l.Value())
	}
	_ = l.Release(ctx)
}

// Redlock, re-entrant: every attempt records its own level, so the late undo of a failed
// attempt never removes the level a later attempt of the same Obtain holds.
func TestRedlockLateUndoKeepsTheNextAttemptsLevel(t *testing.T) {
	faults := redistest.NewFaults(1)
	fx := &redlockFixture{servers: redistest.StartN(t, 3)}
	fx.clients = append(fx.clients, fx.servers[0].Client(faults.Options))
	for _, s := range fx.servers[1:] {
		fx.clients = append(fx.clients, s.Client())
	}
	fx.warmUp(t)
	c := fx.client(t)
	other := fx.client(t)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:late-undo"
	// Attempt 1 is refused by instances 1 and 2; instance 1 frees up after 300 ms.
	fx.clients[1].Set(ctx, key, "blocker-1", 300*time.Millisecond)
	fx.clients[2].Set(ctx, key, "blocker-2", 20*time.Second)
	release := make(chan struct{})
	held := faults.HoldReply(isEvalSHA(scriptRedlockReentrant), release) // instance 0, attempt 1
	l, err := c.Obtain(ctx, key, 10*time.Second, Reentrant("job"))
	<-held
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	close(release) // attempt 1's answer from instance 0 arrives now: it is undone
	time.Sleep(300 * time.Millisecond)
	fx.clients[2].Del(ctx, key)
	if l.Err() != nil {
		t.Fatalf("the Lock is lost: %v", l.Err())
	}
	if l2, err := other.TryObtain(ctx, key, 5*time.Second); err == nil {
		_ = l2.Release(ctx)
		t.Fatalf("two holders: %q and %q; instance 0 holds %q", l.Value(), l2.Value(), fx.clients[0].Get(ctx, key).Val())
	}
	_ = l.Release(ctx)
}

// Redlock, re-entrant: the undo of a failed re-entry attempt is sent again when it is lost,
// within Release's bound. Sent once, a lost undo left the attempt's level on a majority: the
// owner's count one too high (3 where it held 2, as TestHistoryRedlock once saw), and the key
// still there after the owner's last Release, until its TTL.
func TestRedlockLostUndoIsSentAgain(t *testing.T) {
	fx := &redlockFixture{servers: redistest.StartN(t, 3)}
	var faults []*redistest.Faults
	for i, s := range fx.servers {
		f := redistest.NewFaults(uint64(i + 1))
		faults = append(faults, f)
		// No go-redis retries: a lost request is lost for good unless locklib sends it again.
		fx.clients = append(fx.clients, s.Client(f.Options, func(o *redis.Options) { o.MaxRetries = -1 }))
	}
	fx.warmUp(t)
	c := fx.client(t, WithInstanceTimeout(time.Second))
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:lost-undo"
	l1 := mustObtain(t, c, ctx, key, 30*time.Second, Reentrant("job"))
	// The re-entry's first attempt is taken on every instance, but answers after its 100 ms
	// validity: it fails, and its level is undone; the undo's request is lost on instances 0
	// and 1. The next attempt takes level 2.
	var lost []<-chan struct{}
	for i, f := range faults {
		f.DelayRequest(isEvalSHA(scriptRedlockReentrant), 150*time.Millisecond)
		if i < 2 {
			lost = append(lost, f.LoseRequest(isEvalSHA(scriptRedlockRelease)))
		}
	}
	l2 := mustObtain(t, c, ctx, key, 100*time.Millisecond, Reentrant("job"))
	for _, fired := range lost {
		<-fired
	}
	counts := func() []int {
		var out []int
		for _, rdb := range fx.clients {
			v, _ := protocol.ParseValue(rdb.Get(ctx, key).Val())
			out = append(out, v.Count)
		}
		return out
	}
	for deadline := time.Now().Add(releaseTimeout + time.Second); !slices.Equal(counts(), []int{2, 2, 2}); {
		if time.Now().After(deadline) {
			t.Fatalf("the owner holds 2 levels, the instances count %v", counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range []*Lock{l2, l1} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := fx.present(t, key); n != 0 {
		t.Fatalf("both levels released, but %d instance(s) still hold %s", n, key)
	}
}

// Redlock, re-entrant: an acquire that reaches an instance after the Lock's release ran there
// (and found nothing) takes nothing: the release recorded the operation as ended.
func TestRedlockAcquireAfterItsReleaseTakesNothing(t *testing.T) {
	faults := redistest.NewFaults(1)
	fx := &redlockFixture{servers: redistest.StartN(t, 3)}
	for i, s := range fx.servers {
		if i == 2 {
			fx.clients = append(fx.clients, s.Client(faults.Options))
		} else {
			fx.clients = append(fx.clients, s.Client())
		}
	}
	fx.warmUp(t)
	c := fx.client(t, WithInstanceTimeout(200*time.Millisecond))
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:acquire-after-release"
	faults.DelayRequest(isEvalSHA(scriptRedlockReentrant), 700*time.Millisecond)
	l := mustObtain(t, c, ctx, key, 30*time.Second, Reentrant("job"))
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the delayed acquire has run on instance 2
	if n := fx.present(t, key); n != 0 {
		t.Fatalf("%d instance(s) still hold %s (instance 2: %q, PTTL %v)", n, key,
			fx.clients[2].Get(ctx, key).Val(), fx.clients[2].PTTL(ctx, key).Val())
	}
}

// A release sent twice on a busy key (many other operations end before go-redis's re-send)
// still reports its success: the ended set keeps the last 1,024 operations (ENDED_MAX) for
// 10 s, more than can end before go-redis sends it again.
func TestReleaseRunTwiceOnABusyKey(t *testing.T) {
	fx := newFaulty(t, func(o *redis.Options) {
		o.MinRetryBackoff, o.MaxRetryBackoff = 200*time.Millisecond, 200*time.Millisecond
	})
	other, _ := newTestClient(t, fx.srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:busy"
	l := mustObtain(t, fx.c, ctx, key, 10*time.Second)
	fired := fx.faults.DropReply(isScriptWith(scriptRelease, l.Value()))
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		<-fired // the first copy ran: the key is free
		for range 100 {
			if x, err := other.Obtain(ctx, key, time.Second); err == nil {
				_ = x.Release(ctx)
			}
		}
	}()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release whose first copy succeeded: %v", err)
	}
	<-busy
}

// The ended set keeps 1,024 operations (ENDED_MAX) and no more: each new entry past the cap
// drops the oldest.
func TestEndedSetKeepsTheLast1024(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 30*time.Second)
	const key = "lock:ended-cap"
	var last string
	for range 1030 {
		l := mustObtain(t, c, ctx, key, 10*time.Second)
		last = l.h.op
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ended := protocol.EndedKey(key)
	if n := rdb.ZCard(ctx, ended).Val(); n != 1024 {
		t.Fatalf("ended set holds %d operations after 1,030 releases, want 1024", n)
	}
	if err := rdb.ZScore(ctx, ended, last).Err(); err != nil {
		t.Fatalf("the last release is not in the ended set: %v", err)
	}
}

// An Obtain whose context ends against a frozen server returns then: its clean-up runs in
// the background.
func TestObtainReturnsAtItsDeadlineWithTheServerFrozen(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	_ = mustObtain(t, c, context.Background(), "lock:warm", time.Second) // scripts loaded, connection open
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := c.Obtain(ctx, "lock:frozen-obtain", time.Second)
	if took := time.Since(begin); took > time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain with a 200ms context returned after %v: %v", took.Round(time.Millisecond), err)
	}
}

// A client without retries of its own (MaxRetries -1) loses one release request, or its
// reply: Release sends it again (it is safe to), rather than leave the lock to its TTL.
func TestReleaseSurvivesALostRequestWithoutClientRetries(t *testing.T) {
	fx := newFaulty(t, func(o *redis.Options) { o.MaxRetries = -1 })
	ctx := testCtx(t, 10*time.Second)
	for _, lose := range []func(func([]string) bool) <-chan struct{}{fx.faults.LoseRequest, fx.faults.DropReply} {
		l := mustObtain(t, fx.c, ctx, "lock:no-retries", 20*time.Second)
		fired := lose(isScript(scriptRelease))
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release after one lost request or reply: %v", err)
		}
		<-fired
		mustBeFreeWithin(t, fx.rdb, "lock:no-retries", 0)
	}
}

// A server 160 ms away (another region) answers a client of MaxRetries 15 well within
// releaseTimeout: Release must report the release it made (it failed when each of go-redis's
// 16 tries had only a sixteenth of releaseTimeout).
func TestReleaseOnDistantServer(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: 15})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb, WithNode("test"))
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t, 20*time.Second)
	proxy.SetDelay(80 * time.Millisecond) // each way
	l := mustObtain(t, c, ctx, "lock:far", time.Minute)
	start := time.Now()
	err := l.Release(ctx)
	if err != nil {
		t.Errorf("Release after %v: %v", time.Since(start), err)
	}
	proxy.SetDelay(0)
	if n, _ := srv.Client().Exists(ctx, "lock:far").Result(); n != 0 {
		t.Errorf("lock:far still held after Release")
	}
	if rdb.Options().ContextTimeoutEnabled {
		t.Errorf("New turned on ContextTimeoutEnabled on the caller's client, not only on its clone")
	}
}
