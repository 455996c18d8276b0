package locklib

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// newTestClient starts nothing: it returns a Client on srv, closed when the test ends.
func newTestClient(t *testing.T, srv *redistest.Server, opts ...Option) (*Client, *redis.Client) {
	t.Helper()
	rdb := srv.Client()
	c := New(rdb, append([]Option{WithNode("test")}, opts...)...)
	t.Cleanup(func() { _ = c.Close() })
	return c, rdb
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustObtain is Obtain that fails the test (from the test's own goroutine) when the lock is
// not obtained.
func mustObtain(t *testing.T, c *Client, ctx context.Context, key string, ttl time.Duration, opts ...LockOption) *Lock {
	t.Helper()
	l, err := c.Obtain(ctx, key, ttl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// overlapDetector counts critical sections that ran at the same time. Atomics only: Redis
// round trips are no happens-before edge for the race detector.
type overlapDetector struct {
	inside   atomic.Int32
	overlaps atomic.Int32
	sections atomic.Int32
}

func (d *overlapDetector) section(work time.Duration) {
	if d.inside.Add(1) != 1 {
		d.overlaps.Add(1)
	}
	d.sections.Add(1)
	time.Sleep(work)
	d.inside.Add(-1)
}

// critical takes key with c, runs a section of work under it and releases it. A failure
// is reported with t.Error (it may run on any goroutine) and returns false.
func (d *overlapDetector) critical(t *testing.T, ctx context.Context, c *Client, key string, ttl, work time.Duration) bool {
	l, err := c.Obtain(ctx, key, ttl)
	if err != nil {
		t.Error(err)
		return false
	}
	d.section(work)
	if err := l.Release(ctx); err != nil {
		t.Error(err)
		return false
	}
	return true
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// waitGone waits until key no longer exists, failing after within.
func waitGone(t *testing.T, rdb *redis.Client, key string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for rdb.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists %v later", key, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLost waits up to within for l.Lost() to close (failing with what, the event that
// should have closed it) and checks that l.Err() wraps every one of reasons.
func waitLost(t *testing.T, l *Lock, within time.Duration, what string, reasons ...error) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(within):
		t.Fatalf("Lost() did not close %s", what)
	}
	for _, r := range reasons {
		if !errors.Is(l.Err(), r) {
			t.Fatalf("Err() = %v, want it to wrap %v", l.Err(), r)
		}
	}
}

// leaseDeadline is the deadline of l's lease (its member's score: unix ms on the server's
// clock).
func leaseDeadline(t *testing.T, rdb *redis.Client, l *Lock) int64 {
	t.Helper()
	score, err := rdb.ZScore(context.Background(), l.h.key, l.h.match).Result()
	if err != nil {
		t.Fatalf("the lease %q: %v", l.h.match, err)
	}
	return int64(score)
}

// grantedAtExpiry checks, on the server's clock alone (a loaded machine delays the test's
// goroutines, not the server's stamps), that lease l was granted once the lease it waited
// for had expired at deadline (unix ms), never before, and within 800 ms after (a waiter
// that slept until a later lease's deadline fails it).
func grantedAtExpiry(t *testing.T, l *Lock, deadline int64) {
	t.Helper()
	m, ok := protocol.ParseLeaseMember(l.h.match)
	if !ok {
		t.Fatalf("lease member %q", l.h.match)
	}
	late := m.Value.AcquiredAt.UnixMilli() - deadline
	if late < 0 || late > 800 {
		t.Fatalf("granted %d ms after the deadline of the lease it waited for (want 0 to 800)", late)
	}
}

// waitWakeSubscription waits until c's wake-up subscription is up on the server (it starts
// after c's first waiting attempt): a wake-up published before it would be lost, and cost
// the waiter a poll.
func waitWakeSubscription(t *testing.T, rdb *redis.Client, c *Client) {
	t.Helper()
	channel := protocol.WakeChannelPrefix + c.id
	redistest.Eventually(t, "the wake-up subscription of "+c.id, func() bool {
		n, err := rdb.PubSubNumSub(context.Background(), channel).Result()
		return err == nil && n[channel] == 1
	})
}
