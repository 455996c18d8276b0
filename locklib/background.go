package locklib

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// goTracker counts running goroutines. Unlike a sync.WaitGroup, a goroutine may be started
// while wait is waiting: a Lock still in use after Close keeps working.
type goTracker struct {
	mu      sync.Mutex
	running int
	idle    *sync.Cond
}

func (g *goTracker) spawn(f func()) {
	g.mu.Lock()
	g.running++
	g.mu.Unlock()
	go func() {
		defer g.finished()
		f()
	}()
}

func (g *goTracker) finished() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running--; g.running == 0 && g.idle != nil {
		g.idle.Broadcast()
	}
}

// wait returns once no tracked goroutine is running.
func (g *goTracker) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		g.idle = sync.NewCond(&g.mu)
	}
	for g.running > 0 {
		g.idle.Wait()
	}
}

// callBounded runs call and returns when it answers or when ctx ends, whichever comes first.
// go-redis honours a context on the socket only with ContextTimeoutEnabled: without it a read
// waits for ReadTimeout (3 s by default, for each retry), and Release's 2 s bound, the
// watchdog's ttl/3 and a cancelled Obtain would not hold with default client options. A call
// still running when ctx ends goes on in the background, tracked by calls so that Close waits
// for it (go-redis starts no further retry of it once ctx has ended), and hands its result to
// late, if not nil. direct skips the goroutine when the client bounds the socket by itself.
func callBounded[T any](ctx context.Context, calls *goTracker, direct bool,
	call func(context.Context) (T, error), late func(T, error),
) (T, error) {
	if !boundedOnGoroutine(ctx, direct) {
		return call(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	var mu sync.Mutex
	abandoned := false
	calls.spawn(func() {
		v, err := call(ctx)
		mu.Lock()
		gone := abandoned
		if !gone {
			done <- result{v, err} // buffered: never blocks
		}
		mu.Unlock()
		if gone && late != nil {
			late(v, err)
		}
	})
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-done: // it answered just now: take the answer
		return r.v, r.err
	default:
	}
	abandoned = true
	var zero T
	return zero, ctx.Err()
}

// boundedOnGoroutine reports whether callBounded runs a call on a goroutine of its own: when
// ctx can end and the client does not bound the socket by it (direct).
func boundedOnGoroutine(ctx context.Context, direct bool) bool {
	return !direct && ctx.Done() != nil
}

// boundsSocket reports whether rdb cancels a read when its context ends
// (ContextTimeoutEnabled), so callBounded need not run calls on a goroutine of their own.
func boundsSocket(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// retrying runs op until it succeeds, fails for another reason than the connection (a reply
// of the server, ErrNotHeld), or ctx ends, with a short back-off. It is for the requests
// that are safe to send again (a release, a clean-up: the scripts recognize their own
// earlier effect), so that one request or reply lost on the way does not leave a lock held
// until its TTL when the go-redis client does not retry by itself (MaxRetries -1), or ran out
// of retries.
func retrying(ctx context.Context, op func(context.Context) error) error {
	delay := 5 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil {
			return nil
		}
		var reply redis.Error
		if !errors.Is(err, ErrBackend) || errors.As(err, &reply) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
