package locklib

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"

	"github.com/lockscope/lockscope/locklib/protocol"
)

func TestReentryCounts(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:reentrant"
	outer := mustObtain(t, c, ctx, key, 5*time.Second, Reentrant("job-42"), WithTrace("req-1"))
	if !strings.HasSuffix(outer.Value(), ":1") {
		t.Fatalf("value %q has no count 1", outer.Value())
	}
	base := strings.TrimSuffix(outer.Value(), ":1")
	inner := mustObtain(t, c, ctx, key, time.Second, Reentrant("job-42"))
	if inner.Value() != base+":2" || rdb.Get(ctx, key).Val() != base+":2" {
		t.Fatalf("re-entry value %q, stored %q, want %q", inner.Value(), rdb.Get(ctx, key).Val(), base+":2")
	}
	if inner.Token() != outer.Token() {
		t.Fatalf("re-entry bumped the token: %d then %d", outer.Token(), inner.Token())
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 4*time.Second {
		t.Fatalf("re-entry with a shorter TTL shortened the lock to %v", pttl)
	}

	// Another owner, on the same client or another, can neither enter nor release.
	if _, err := c.TryObtain(ctx, key, time.Second, Reentrant("job-43")); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another owner entered: %v", err)
	}
	c2, _ := newTestClient(t, srv)
	if _, err := c2.TryObtain(ctx, key, time.Second, Reentrant("job-42")); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("the same owner id on another client entered: %v", err)
	}
	// Without an owner there is nothing to re-enter by: refused at once, not a wait on
	// itself until the context ends.
	if _, err := c.TryObtain(ctx, key, time.Second, Reentrant("")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a TryObtain without owner: %v, want ErrInvalid", err)
	}
	if _, err := c.Obtain(ctx, key, time.Second, Reentrant("")); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "needs an owner") {
		t.Fatalf("an Obtain without owner: %v, want ErrInvalid naming the owner", err)
	}
	forged := &Lock{c: c2, h: hold{key: key, match: strings.Replace(base, "req-1", "req-2", 1), op: "forged:1", reentrant: true}}
	forged.lost = make(chan struct{})
	forged.expiry = time.NewTimer(time.Hour)
	defer forged.expiry.Stop()
	if err := forged.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a foreign value released: %v", err)
	}

	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, key).Val(); got != base+":1" {
		t.Fatalf("after one release the key holds %q, want %q", got, base+":1")
	}
	if err := outer.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatalf("refresh after an inner release: %v", err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Fatal("key still exists after the last release")
	}
}

// Tokens increase across a released lock's counter going (it lives the lock's ttl) or going
// back (a failover to a replica that missed increments), and count on from a counter that
// is ahead of the clock (the server's clock stepped back) while it lives.
func TestFencingTokensMonotonic(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:fenced"
	var last int64
	for i := range 30 {
		l := mustObtain(t, c, ctx, key, time.Second)
		if l.Token() <= last {
			t.Fatalf("acquisition %d: token %d not above %d", i, l.Token(), last)
		}
		last = l.Token()
		if ttl := rdb.PTTL(ctx, protocol.FenceKey(key)).Val(); ttl <= 0 || ttl > time.Second {
			t.Fatalf("fence counter expiry %v, want the lock's ttl (1s)", ttl)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 1: // the counter is deleted (or evicted, or its ttl passed)
			rdb.Del(ctx, protocol.FenceKey(key))
		case 2: // a failover to a replica that missed increments: the counter goes back
			rdb.Set(ctx, protocol.FenceKey(key), last-1000, 0)
		}
	}
	// The clock stepped back by a minute: while the counter lives, tokens count on from it.
	ahead := last + 60_000_000
	rdb.Set(ctx, protocol.FenceKey(key), ahead, 0)
	for i := range 3 {
		l := mustObtain(t, c, ctx, key, time.Second)
		if want := ahead + int64(i) + 1; l.Token() != want {
			t.Fatalf("after the clock stepped back, token %d, want %d", l.Token(), want)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// WithFenceRetention keeps the counter at least that long after each acquisition, a
// hand-off included.
func TestFenceRetention(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv, WithFenceRetention(time.Hour))
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:retained"
	l := mustObtain(t, c, ctx, key, time.Second)
	if ttl := rdb.PTTL(ctx, protocol.FenceKey(key)).Val(); ttl < 59*time.Minute {
		t.Fatalf("fence counter expiry %v, want the retention (1h)", ttl)
	}
	waiter := make(chan *Lock)
	go func() {
		w, err := c.Obtain(ctx, key, time.Second)
		if err != nil {
			t.Error(err)
		}
		waiter <- w
	}()
	redistest.Eventually(t, "the waiter queued", func() bool { return rdb.ZCard(ctx, protocol.WaitQueueKey(key)).Val() == 1 })
	rdb.Del(ctx, protocol.FenceKey(key))
	if err := l.Release(ctx); err != nil { // hands the lock to the waiter: a new token
		t.Fatal(err)
	}
	w := <-waiter
	if w == nil {
		t.FailNow()
	}
	if ttl := rdb.PTTL(ctx, protocol.FenceKey(key)).Val(); ttl < 59*time.Minute {
		t.Fatalf("fence counter expiry %v after a hand-off, want the retention (1h)", ttl)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestClusterKeyCheck(t *testing.T) {
	for key, ok := range map[string]bool{
		"lock:order:1001":   true,
		"lock:{order}:1001": true,
		"lock:{abc":         true, // no '}': the companion's tag is the whole key
		"lock:abc}":         false,
		"lock:{}x}":         false,
	} {
		err := checkClusterKey(key)
		if ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("checkClusterKey(%q) = %v", key, err)
		}
	}
}

// The fence counter lives as long as the lock it fences: a re-entry after the lock was renewed
// past its first ttl reports the first level's token.
func TestReentryAfterRenewalKeepsToken(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:renewed-reentry"
	outer := mustObtain(t, c, ctx, key, 200*time.Millisecond, Reentrant("job"))
	if err := outer.Refresh(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past the first ttl
	inner := mustObtain(t, c, ctx, key, time.Second, Reentrant("job"))
	if inner.Token() != outer.Token() {
		t.Fatalf("re-entry after a renewal: token %d, want the outer level's %d", inner.Token(), outer.Token())
	}
	for _, l := range []*Lock{inner, outer} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
