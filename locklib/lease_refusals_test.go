package locklib

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
)

// A limit key that does not hold a count of at least 1 (written by hand, or by another
// program) is refused, not read as a number: Lua's tonumber reads "2.5" as 2.5 (a third
// permit while 2 are out leaves 0.5 "free") and "inf" as no limit at all, and overwriting
// "abc" with this Semaphore's size would hide the broken key.
func TestSemaphoreLimitKeyNotACount(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	for _, bad := range []string{"2.5", "inf", "0x2", "1e1", " 2", "0", "-1", "abc", "99999999999999999999"} {
		key := "lock:sem:limit:" + bad
		if err := rdb.Set(ctx, protocol.LimitKey(key), bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		sem := c.Semaphore(key, 2)
		var held []*Lock
		var err error
		for range 3 {
			var l *Lock
			if l, err = sem.TryAcquire(ctx, 10*time.Second); err != nil {
				break
			}
			held = append(held, l)
		}
		if len(held) > 0 || !errors.Is(err, ErrBackend) {
			t.Errorf("limit %q: %d permits granted, then %v; want none and ErrBackend", bad, len(held), err)
		}
		if got, _ := rdb.Get(ctx, protocol.LimitKey(key)).Result(); got != bad {
			t.Errorf("limit %q was overwritten with %q", bad, got)
		}
		if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
			t.Errorf("limit %q: the lease set was written", bad)
		}
		if st, err := sem.Status(ctx); !errors.Is(err, ErrBackend) {
			t.Errorf("limit %q: Status %+v, %v; want ErrBackend", bad, st, err)
		}
		for _, l := range held {
			_ = l.Release(context.Background())
		}
		if err := sem.Resize(ctx, 2); err != nil { // the way out the error names
			t.Fatal(err)
		}
		mustRelease(t, mustAcquire(t, sem, ctx, time.Second))
	}
}

// A read-write lock and a semaphore are both sorted sets, so Redis' WRONGTYPE does not keep
// them apart: two programs that picked one key for both must get an error, not a permit
// beside a writer (a permit script counts levels as permits) or a reader beside permits.
func TestLeaseKindsRefuseEachOther(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const rw, sem = "lock:kinds:rw", "lock:kinds:sem"
	w, err := c.TryObtainWrite(ctx, rw, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Semaphore(sem, 5).TryAcquire(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]string{rw: rdb.ZRange(ctx, rw, 0, -1).Val(), sem: rdb.ZRange(ctx, sem, 0, -1).Val()}
	for name, try := range map[string]func() (*Lock, error){
		"a permit beside a writer": func() (*Lock, error) { return c.Semaphore(rw, 5).TryAcquire(ctx, time.Second) },
		"a reader beside permits":  func() (*Lock, error) { return c.TryObtainRead(ctx, sem, time.Second) },
		"a writer beside permits":  func() (*Lock, error) { return c.TryObtainWrite(ctx, sem, time.Second) },
	} {
		if l, err := try(); l != nil || !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("%s: %v, %v; want ErrBackend (WRONGTYPE)", name, l != nil, err)
		}
	}
	for key, members := range before {
		if got := rdb.ZRange(ctx, key, 0, -1).Val(); !slices.Equal(got, members) {
			t.Errorf("%s: members %v, want %v", key, got, members)
		}
	}
	mustRelease(t, w)
	mustRelease(t, p)
}

// A Resize that frees more permits than one change wakes (WAKE_RUN, 64) still gets every
// waiter it admits its permit at once, not at its next poll: each grant from the queue wakes
// the next waiter beyond the run.
func TestSemaphoreResizeWakesMoreThanARun(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	slow, _ := newTestClient(t, srv, WithBackoff(5*time.Second, 5*time.Second))
	ctx := testCtx(t, 30*time.Second)
	const key, waiters = "lock:sem:resize-run", 70
	sem := c.Semaphore(key, 1)
	first := mustAcquire(t, sem, ctx, 20*time.Second)
	granted := make(chan *Lock, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			l, err := slow.Semaphore(key, 1).Acquire(ctx, 20*time.Second)
			if err != nil {
				t.Error(err)
			}
			granted <- l
		})
	}
	waitForSemWaiters(t, sem, waiters)
	waitWakeSubscription(t, rdb, slow)
	if err := sem.Resize(ctx, 1+waiters); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(2 * time.Second) // the polls come 2.5-5 s apart
	var held []*Lock
	for len(held) < waiters {
		select {
		case l := <-granted:
			held = append(held, l)
		case <-timeout:
			t.Errorf("Resize granted %d of %d waiters within 2s", len(held), waiters)
			held = append(held, <-granted) // the rest come at their polls
		}
	}
	wg.Wait()
	mustRelease(t, append(held, first)...)
}

// The fencing counter outlives every lease of a read-write lock, as a lock's outlives the
// lock (extendTo): a write level entered again, or a read level taken by the writer (a
// downgrade), with a longer ttl than the first write's, keeps it. Else, once it ran out
// under a holder, the holder's next level drew another token, readers let in after the
// downgrade read 0 instead of the last write's token, and nothing carried tokens past a
// server clock that steps back while the lock was still held.
func TestRWFenceOutlivesEveryLease(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const short, long = 200 * time.Millisecond, 5 * time.Second
	for _, second := range []string{"write", "read"} {
		key := "lock:rw:fence:" + second
		first := mustObtainModeTTL(t, c.ObtainWrite, ctx, key, short, Reentrant("owner"))
		obtain := c.ObtainWrite
		if second == "read" {
			obtain = c.ObtainRead
		}
		kept := mustObtainModeTTL(t, obtain, ctx, key, long, Reentrant("owner"))
		mustRelease(t, first)
		time.Sleep(short + 100*time.Millisecond)
		if n := rdb.Exists(ctx, protocol.FenceKey(key)).Val(); n != 1 {
			t.Errorf("%s: the fence counter ran out while a level of %v holds the lock", second, long)
		}
		var next *Lock
		if second == "write" {
			next = mustObtainModeTTL(t, c.ObtainWrite, ctx, key, time.Second, Reentrant("owner"))
		} else {
			next = mustObtainModeTTL(t, other.ObtainRead, ctx, key, time.Second)
		}
		if next.Token() != first.Token() || kept.Token() != first.Token() {
			t.Errorf("%s: tokens %d, %d, %d; want the first write's each time", second, first.Token(), kept.Token(), next.Token())
		}
		mustRelease(t, next, kept)
	}
}
