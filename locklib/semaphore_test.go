package locklib

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// mustAcquire is Acquire that fails the test (from the test's own goroutine) when no permit
// is granted.
func mustAcquire(t *testing.T, s *Semaphore, ctx context.Context, ttl time.Duration, opts ...LockOption) *Lock {
	t.Helper()
	l, err := s.Acquire(ctx, ttl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mustStatus fails unless the semaphore's status is want.
func mustStatus(t *testing.T, s *Semaphore, want SemaphoreStatus) {
	t.Helper()
	got, err := s.Status(context.Background())
	if err != nil || got != want {
		t.Fatalf("Status() = %+v, %v; want %+v", got, err, want)
	}
}

// waitForSemWaiters waits until n waiters are queued on s.
func waitForSemWaiters(t *testing.T, s *Semaphore, n int) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%d waiters queued on %s", n, s.key), func() bool {
		st, err := s.Status(context.Background())
		return err == nil && st.Waiters == n
	})
}

// Many goroutines of two Clients cycle through a semaphore of 3: never more than 3 inside
// at once (counted in the process, and read on the server), and 3 at once is reached (it is
// a semaphore, not a mutex); every grant's token is new.
func TestSemaphoreNeverMoreThanLimit(t *testing.T) {
	srv := redistest.Start(t)
	a, rdb := newTestClient(t, srv)
	b, _ := newTestClient(t, srv)
	ctx := testCtx(t, 30*time.Second)
	const key, limit, goroutines, cycles = "lock:sem:limit", 3, 12, 6
	var inside, most atomic.Int32
	var mu sync.Mutex
	tokens := map[int64]bool{}
	sampling, stop := context.WithCancel(ctx)
	var serverMost atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for sampling.Err() == nil {
			now := fmt.Sprint(time.Now().UnixMilli())
			if n := rdb.ZCount(ctx, key, "("+now, "+inf").Val(); n > serverMost.Load() {
				serverMost.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	})
	var workers sync.WaitGroup
	for g := range goroutines {
		c := a
		if g%2 == 1 {
			c = b
		}
		sem := c.Semaphore(key, limit)
		workers.Go(func() {
			for range cycles {
				l, err := sem.Acquire(ctx, 5*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				mu.Lock()
				if tokens[l.Token()] {
					t.Errorf("token %d granted twice", l.Token())
				}
				tokens[l.Token()] = true
				mu.Unlock()
				time.Sleep(time.Duration(2+rand.IntN(4)) * time.Millisecond)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	workers.Wait()
	stop()
	wg.Wait()
	if most.Load() > limit || serverMost.Load() > limit {
		t.Fatalf("%d permits out at once in the process, %d on the server; the limit is %d", most.Load(), serverMost.Load(), limit)
	}
	if most.Load() < limit {
		t.Fatalf("at most %d permits out at once among %d goroutines: the semaphore serialised them", most.Load(), goroutines)
	}
	if len(tokens) != goroutines*cycles {
		t.Fatalf("%d tokens for %d grants", len(tokens), goroutines*cycles)
	}
	mustStatus(t, a.Semaphore(key, limit), SemaphoreStatus{Limit: limit})
	waitGone(t, rdb, key, 0)
}

// Waiters get permits in the order they arrived, across Clients: each release grants the
// next one, and only it, although every waiter polls every few ms (a waiter behind the head
// that found the freed permit first would take it if the order were not kept).
func TestSemaphoreFIFOOrder(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newTestClient(t, srv, WithBackoff(time.Millisecond, 4*time.Millisecond))
	b, _ := newTestClient(t, srv, WithBackoff(time.Millisecond, 4*time.Millisecond))
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:fifo"
	sem := a.Semaphore(key, 2)
	held := []*Lock{mustAcquire(t, sem, ctx, 10*time.Second), mustAcquire(t, sem, ctx, 10*time.Second)}
	const waiters = 5
	granted := make(chan int, waiters)
	permits := make([]chan *Lock, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		permits[i] = make(chan *Lock, 1)
		c := []*Client{a, b}[i%2]
		wg.Go(func() {
			l, err := c.Semaphore(key, 2).Acquire(ctx, 10*time.Second)
			if err != nil {
				t.Error(err)
				granted <- -1
				return
			}
			permits[i] <- l
			granted <- i
		})
		waitForSemWaiters(t, sem, i+1) // one at a time: the arrival order is known
	}
	if _, err := sem.TryAcquire(ctx, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryAcquire with every permit out: %v, want ErrNotObtained", err)
	}
	for want := range waiters {
		if err := held[want].Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-granted; got != want {
			t.Fatalf("a release granted waiter %d, want %d (arrival order)", got, want)
		}
		held = append(held, <-permits[want])
		select {
		case got := <-granted:
			t.Fatalf("waiter %d was granted too: only one permit was released", got)
		case <-time.After(20 * time.Millisecond):
		}
	}
	wg.Wait()
	for _, l := range held[waiters:] {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A holder that crashed gives its permits back at their TTL: a waiter gets one then, and
// the key is gone at the last deadline.
func TestSemaphoreCrashedHolderPermitComesBackAtItsTTL(t *testing.T) {
	srv := redistest.Start(t)
	waiter, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key, ttl = "lock:sem:crash", 400 * time.Millisecond
	crashed := New(srv.Client(), WithNode("crashed"))
	sem := crashed.Semaphore(key, 2)
	first := mustAcquire(t, sem, ctx, ttl)
	mustAcquire(t, sem, ctx, 4*ttl)
	_ = crashed.Close() // and its permits are never released
	deadline := leaseDeadline(t, rdb, first)

	l := mustAcquire(t, waiter.Semaphore(key, 2), ctx, 10*time.Second)
	grantedAtExpiry(t, l, deadline)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rdb, key, 4*ttl) // the second crashed permit's deadline: no leak
}

// The watchdog keeps a permit past its TTL; without one it would be gone.
func TestSemaphoreWatchdogKeepsPermit(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:watchdog"
	l := mustAcquire(t, c.Semaphore(key, 1), ctx, 150*time.Millisecond, WithWatchdog())
	time.Sleep(500 * time.Millisecond)
	if l.Err() != nil {
		t.Fatalf("the watchdog lost the permit: %v", l.Err())
	}
	if d, err := l.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL %v, %v: the permit ran out", d, err)
	}
	if _, err := other.Semaphore(key, 1).TryAcquire(ctx, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another Client got a permit of a full semaphore: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := other.Semaphore(key, 1).TryAcquire(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if next.Token() <= l.Token() {
		t.Fatalf("token %d after %d", next.Token(), l.Token())
	}
	_ = next.Release(ctx)
}

// A permit removed from the lease set (an operator's force-release: ZREM of its member) is
// lost: the watchdog's next renewal is refused and Lost() closes; Refresh and Release say
// ErrNotHeld.
func TestSemaphorePermitLostWhenRemoved(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:removed"
	sem := c.Semaphore(key, 2)
	l := mustAcquire(t, sem, ctx, 600*time.Millisecond, WithWatchdog())
	kept := mustAcquire(t, sem, ctx, 10*time.Second)
	if _, ok := protocol.ParseLeaseMember(l.Value()); !ok {
		t.Fatalf("the permit's value %q is no lease member", l.Value())
	}
	if n := rdb.ZRem(ctx, key, l.Value()).Val(); n != 1 {
		t.Fatalf("ZREM of the permit's member removed %d", n)
	}
	waitLost(t, l, time.Second, "after its member was removed", ErrLost, ErrNotHeld)
	if err := l.Refresh(ctx, time.Second); !errors.Is(err, ErrLost) {
		t.Fatalf("Refresh of a lost permit: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release of a removed permit: %v, want ErrNotHeld", err)
	}
	if kept.Err() != nil {
		t.Fatalf("the other permit was lost too: %v", kept.Err())
	}
	if err := kept.Refresh(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = kept.Release(ctx)
}

// Resize up grants the waiters the new permits go to at once (they poll rarely here: the
// release's wake-up is what grants them); Resize down takes no permit back, and grants
// none until fewer than the new limit are out.
func TestSemaphoreResize(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	slow, _ := newTestClient(t, srv, WithBackoff(time.Second, 5*time.Second))
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:resize"
	sem := c.Semaphore(key, 1)
	first := mustAcquire(t, sem, ctx, 10*time.Second)
	granted := make(chan *Lock, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			l, err := slow.Semaphore(key, 1).Acquire(ctx, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			granted <- l
		})
		waitForSemWaiters(t, sem, i+1)
	}
	waitWakeSubscription(t, rdb, slow)
	resized := time.Now()
	if err := sem.Resize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var held []*Lock
	for range 2 {
		select {
		case l := <-granted:
			held = append(held, l)
		case <-time.After(500 * time.Millisecond):
			t.Fatalf("Resize(3) granted %d waiters within 500ms, want 2", len(held))
		}
	}
	if took := time.Since(resized); took > 500*time.Millisecond {
		t.Fatalf("the waiters got the new permits %v after Resize", took)
	}
	mustStatus(t, sem, SemaphoreStatus{Limit: 3, InUse: 3, Waiters: 1})

	if err := sem.Resize(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, sem, SemaphoreStatus{Limit: 1, InUse: 3, Waiters: 1})
	for _, l := range append(held, first) {
		if d, err := l.TTL(ctx); err != nil || d <= 0 {
			t.Fatalf("a shrink took a permit back: TTL %v, %v", d, err)
		}
	}
	for _, l := range []*Lock{held[0], held[1]} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustStatus(t, sem, SemaphoreStatus{Limit: 1, InUse: 1, Waiters: 1})
	select {
	case <-granted:
		t.Fatal("a waiter was granted a permit while the new limit's one is out")
	case <-time.After(100 * time.Millisecond):
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	last := <-granted
	wg.Wait()
	if last == nil {
		t.FailNow()
	}
	_ = last.Release(ctx)
	if err := sem.Resize(ctx, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Resize(0): %v, want ErrInvalid", err)
	}
}

// A request that runs twice (its reply lost, go-redis sends it again) gives the same outcome:
// one permit for an acquire (with a token of its own), one release.
func TestSemaphoreRequestsRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:twice"
	sem := c.Semaphore(key, 2)
	before := mustAcquire(t, sem, ctx, 10*time.Second)
	for _, try := range []bool{true, false} {
		fired := f.DropReply(isScript(scriptSemAcquire))
		acquire := sem.Acquire
		if try {
			acquire = sem.TryAcquire
		}
		l, err := acquire(ctx, 10*time.Second)
		<-fired
		if err != nil {
			t.Fatalf("try %v: an acquire whose first reply was lost: %v", try, err)
		}
		if members := rdb.ZRange(ctx, key, 0, -1).Val(); len(members) != 2 || !slices.Contains(members, l.Value()) {
			t.Fatalf("try %v: the lease set holds %q; want the first permit and %q", try, members, l.Value())
		}
		if l.Token() <= before.Token() {
			t.Fatalf("try %v: token %d after %d", try, l.Token(), before.Token())
		}
		fired = f.DropReply(isScript(scriptLeaseRelease))
		if err := l.Release(ctx); err != nil {
			t.Fatalf("try %v: a release whose first reply was lost: %v, want nil", try, err)
		}
		<-fired
		if n := rdb.ZCard(ctx, key).Val(); n != 1 {
			t.Fatalf("try %v: %d permits out after the release, want 1", try, n)
		}
	}
	if err := before.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rdb, key, 0)
}

// An acquire that reaches the server after its Acquire gave up takes nothing (the clean-up
// recorded the operation as ended), and one that ran but whose answer came too late gives
// its permit back.
func TestSemaphoreLateAcquireTakesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		try  bool
		late func(f *redistest.Faults, done <-chan struct{}) <-chan struct{}
	}{
		{"delayed request, TryAcquire", true, func(f *redistest.Faults, _ <-chan struct{}) <-chan struct{} {
			return f.DelayRequest(isScriptWith(scriptSemAcquire, "late"), 250*time.Millisecond)
		}},
		{"delayed request, Acquire", false, func(f *redistest.Faults, _ <-chan struct{}) <-chan struct{} {
			return f.DelayRequest(isScriptWith(scriptSemAcquire, "late"), 250*time.Millisecond)
		}},
		{"held reply, Acquire", false, func(f *redistest.Faults, done <-chan struct{}) <-chan struct{} {
			return f.HoldReply(isScriptWith(scriptSemAcquire, "late"), done)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFaulty(t)
			c, rdb := fx.c, fx.rdb
			const key = "lock:sem:late"
			done := make(chan struct{})
			defer close(done)
			fired := tc.late(fx.faults, done)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			acquire := c.Semaphore(key, 1).Acquire
			if tc.try {
				acquire = c.Semaphore(key, 1).TryAcquire
			}
			l, err := acquire(ctx, 20*time.Second, WithTrace("late"))
			if err == nil {
				_ = l.Release(context.Background())
				t.Fatal("Acquire returned a permit after its context ended")
			}
			if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want ErrNotObtained and the context's error", err)
			}
			<-fired
			time.Sleep(350 * time.Millisecond) // the delayed request has run by now
			if members := rdb.ZRange(context.Background(), key, 0, -1).Val(); len(members) != 0 {
				t.Fatalf("the lease set holds %q: a permit for nobody", members)
			}
			// One more copy of its acquire, later still: the ended set turns it away.
			op := fmt.Sprintf("%s:%d", c.id, c.seq.Load())
			v := protocol.NewValue("test", "late", time.Now()).String()
			before, after, _ := protocol.AroundStamp(v)
			reply, err := newScriptRunner(rdb).run(context.Background(), scriptSemAcquire, permitKeys(key),
				op, 20000, "", 1750, 20000, 1, "", "", before, after).Slice()
			if err != nil || len(reply) == 0 || reply[0] != int64(-2) {
				t.Fatalf("a copy of the acquire of %s run after it ended: %v, %v; want status -2", op, reply, err)
			}
			if members := rdb.ZRange(context.Background(), key, 0, -1).Val(); len(members) != 0 {
				t.Fatalf("the lease set holds %q: a permit for nobody", members)
			}
		})
	}
}

// What a semaphore refuses: re-entry, fewer than 1 permit, Redlock.
func TestSemaphoreRefusals(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	if _, err := c.Semaphore("lock:sem:refused", 2).Acquire(ctx, time.Second, Reentrant("job")); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "not re-entrant") {
		t.Fatalf("Reentrant: %v, want ErrInvalid", err)
	}
	none := c.Semaphore("lock:sem:refused", 0)
	if _, err := none.TryAcquire(ctx, time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("0 permits: %v, want ErrInvalid", err)
	}
	if _, err := none.Status(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Status with 0 permits: %v, want ErrInvalid", err)
	}

	rl, err := NewRedlock([]redis.UniversalClient{srv.Client(), srv.Client(), srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	sem := rl.Semaphore("lock:sem:redlock", 2)
	for name, call := range map[string]func() error{
		"Acquire":    func() error { _, err := sem.Acquire(ctx, time.Second); return err },
		"TryAcquire": func() error { _, err := sem.TryAcquire(ctx, time.Second); return err },
		"Resize":     func() error { return sem.Resize(ctx, 3) },
		"Status":     func() error { _, err := sem.Status(ctx); return err },
	} {
		if err := call(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not supported on Redlock") {
			t.Fatalf("%s on Redlock: %v, want ErrInvalid", name, err)
		}
	}
}

// On a cluster a semaphore's key, its companions and its limit share one slot: every script
// runs there, keys with and without a hash tag, and a release on one Client wakes a waiter of
// another through the cluster.
func TestSemaphoreRedisCluster(t *testing.T) {
	redistest.Slow(t)
	cluster := redistest.StartCluster(t, 3)
	a := New(cluster.Client(), WithNode("a"))
	defer a.Close()
	b := New(cluster.Client(), WithNode("b"))
	defer b.Close()
	ctx := testCtx(t, 30*time.Second)
	for i := range 4 {
		for _, key := range []string{fmt.Sprintf("lock:pool:%d", i), fmt.Sprintf("lock:{pool}:%d", i)} {
			sem := a.Semaphore(key, 2)
			one := mustAcquire(t, sem, ctx, time.Second, WithWatchdog())
			two := mustAcquire(t, b.Semaphore(key, 2), ctx, time.Second)
			got := make(chan error, 1)
			go func() {
				l, err := b.Semaphore(key, 2).Acquire(ctx, time.Second)
				if err == nil {
					err = l.Release(ctx)
				}
				got <- err
			}()
			waitForSemWaiters(t, sem, 1)
			if err := one.Refresh(ctx, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := one.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if err := sem.Resize(ctx, 3); err != nil {
				t.Fatal(err)
			}
			mustStatus(t, sem, SemaphoreStatus{Limit: 3, InUse: 1})
			if err := two.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := a.Semaphore("lock:a}b", 2).TryAcquire(ctx, time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a key whose companions are in another slot: %v, want ErrInvalid", err)
	}
}

// A semaphore script that fails (a companion key of the wrong type) has changed nothing: each
// reads every key it may write before its first write (protocol/lib.lua).
func TestSemaphoreFailedScriptWritesNothing(t *testing.T) {
	companions := map[string]func(string) string{"fence": protocol.FenceKey, "queue": protocol.WaitQueueKey,
		"presence": protocol.WaitPresenceKey, "ended": protocol.EndedKey, "limit": protocol.LimitKey}
	paths := map[string]func(sem *Semaphore) error{
		"TryAcquire": func(sem *Semaphore) error { return tryAndRelease(sem.TryAcquire(context.Background(), 10*time.Second)) },
		"Acquire of a full semaphore": func(sem *Semaphore) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			return tryAndRelease(sem.Acquire(ctx, 10*time.Second))
		},
		"Resize": func(sem *Semaphore) error { return sem.Resize(context.Background(), 2) },
	}
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	n := 0
	for pathName, call := range paths {
		for name, companion := range companions {
			n++
			key := fmt.Sprintf("lock:sem:wrong-type:%d", n)
			sem := c.Semaphore(key, 1)
			if strings.HasPrefix(pathName, "Acquire") {
				mustAcquire(t, sem, context.Background(), 10*time.Second)
			}
			rdb.Del(context.Background(), companion(key))
			rdb.HSet(context.Background(), companion(key), "f", "v")
			// The set and its companions but the ended set, where a failed Acquire is recorded.
			checkWroteNothing(t, pathName+" with "+name+" a hash", func() error { return call(sem) },
				func() string { return snapshot(t, rdb, append(permitKeys(key)[:4], protocol.LimitKey(key))...) })
		}
	}
}

// A permit's acquired, waiting, renewed and released events carry "mode":"permit" and, for
// a holder, its member as the value (the inspector re-reads the lease set for them).
func TestSemaphoreEvents(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	events := subscribeEvents(t, rdb)
	const key = "lock:sem:events"
	sem := c.Semaphore(key, 1)
	l := mustAcquire(t, sem, ctx, 10*time.Second, WithTrace("t-1"))
	got := make(chan error, 1)
	go func() {
		w, err := sem.Acquire(ctx, 10*time.Second, WithTrace("t-2"))
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	waitForSemWaiters(t, sem, 1)
	if err := l.Refresh(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	want := []EventType{EventAcquired, EventWaiting, EventRenewed, EventReleased, EventAcquired, EventReleased}
	for i, w := range want {
		e := events.next(t)
		if e.Type != string(w) || e.Key != key || e.Mode != "permit" || e.Node != "test" {
			t.Fatalf("event %d: %+v, want %s with mode permit", i, e, w)
		}
		if m, ok := protocol.ParseLeaseMember(e.Value); e.Type != string(EventWaiting) && (!ok || m.Mode != protocol.ModePermit) {
			t.Fatalf("event %d: %+v: the value is no permit member", i, e)
		}
		if i == 0 && (e.Value != l.Value() || e.Token != l.Token() || e.Trace != "t-1") {
			t.Fatalf("acquired event %+v, want value %q token %d", e, l.Value(), l.Token())
		}
	}
}

// WithReplicas works for permits as for locks: an Acquire returns once the replica has the
// permit; when it does not confirm, the Acquire gives the permit back and fails at once.
func TestSemaphoreWithReplicas(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 1)
	master, replica := r.Nodes[0], r.Nodes[1]
	// A WAIT that a replica in sync answers in a millisecond or two, with room for a loaded machine.
	c, rdb := newTestClient(t, master, WithReplicas(1, time.Second))
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:sem:rep"
	sem := c.Semaphore(key, 2)
	l := mustAcquire(t, sem, ctx, 5*time.Second)
	if _, err := replica.Client().ZScore(ctx, key, l.Value()).Result(); err != nil {
		t.Fatalf("the replica right after Acquire: %v; want the permit %q", err, l.Value())
	}
	if err := l.Refresh(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	replica.Pause()
	defer replica.Resume()
	if _, err := sem.TryAcquire(ctx, 5*time.Second); !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("TryAcquire with the replica frozen: %v, want ErrNotObtained and ErrNotReplicated", err)
	}
	if n := rdb.ZCard(ctx, key).Val(); n != 1 {
		t.Fatalf("%d permits out after an Acquire that its replica did not confirm, want 1", n)
	}
	_ = l.Release(ctx)
}
