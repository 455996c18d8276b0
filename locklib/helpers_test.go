package locklib

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
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
