package locklib

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// rwMembers is the lease set at key: its members by mode.
func rwMembers(t *testing.T, rdb redis.UniversalClient, key string) map[protocol.Mode][]protocol.LeaseMember {
	t.Helper()
	all, err := rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	by := map[protocol.Mode][]protocol.LeaseMember{}
	for _, s := range all {
		m, ok := protocol.ParseLeaseMember(s)
		if !ok {
			t.Fatalf("%s holds %q: no lease member", key, s)
		}
		by[m.Mode] = append(by[m.Mode], m)
	}
	return by
}

func mustRelease(t *testing.T, ls ...*Lock) {
	t.Helper()
	for _, l := range ls {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Readers hold together; a writer waits for all of them and excludes every other holder;
// write grants draw fencing tokens, reads report the counter.
func TestRWReadersShareWriterExcludes(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:share"
	r1, err := c.TryObtainRead(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := other.TryObtainRead(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	// Before any write there is no counter: the first read sets it from the server's clock,
	// and the second reads it.
	if r1.Token() <= 0 || r2.Token() != r1.Token() {
		t.Fatalf("reader tokens %d, %d before any write, want one clock token", r1.Token(), r2.Token())
	}
	if got := rwMembers(t, rdb, key); len(got[protocol.ModeRead]) != 2 {
		t.Fatalf("members %v, want two readers", got)
	}
	if _, err := other.TryObtainWrite(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtainWrite with readers in: %v, want ErrNotObtained", err)
	}
	// The writer polls only 0-3 s apart: got in within 1 s of the last reader's release, it
	// was woken (a bound that a loaded machine keeps, where one below the 250 ms default
	// back-off flaked).
	slow, _ := newTestClient(t, srv, WithBackoff(3*time.Second, 3*time.Second))
	got := make(chan *Lock, 1)
	go func() {
		w, err := slow.ObtainWrite(ctx, key, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	waitForWaiters(t, rdb, key, 1)
	waitWakeSubscription(t, rdb, slow)
	mustRelease(t, r1)
	select {
	case <-got:
		t.Fatal("the writer got in with a reader still holding")
	case <-time.After(100 * time.Millisecond):
	}
	begin := time.Now()
	mustRelease(t, r2)
	w := <-got
	if w == nil {
		return
	}
	if wait := time.Since(begin); wait > time.Second {
		t.Errorf("the writer got in %v after the last reader left: not woken", wait)
	}
	if w.Token() <= r1.Token() {
		t.Fatalf("write token %d, want above the readers' %d", w.Token(), r1.Token())
	}
	if _, err := c.TryObtainRead(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtainRead with a writer in: %v, want ErrNotObtained", err)
	}
	if _, err := c.TryObtainWrite(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtainWrite with a writer in: %v, want ErrNotObtained", err)
	}
	mustRelease(t, w)
	r3, err := c.TryObtainRead(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Token() != w.Token() {
		t.Fatalf("a reader after the write reports token %d, want the write's %d", r3.Token(), w.Token())
	}
	// A read after the counter has gone (expired: the lock was free longer than its
	// lifetime) gets a clock token above the last write's, never 0: a resource that refuses
	// reads below the version it holds still serves it.
	mustRelease(t, r3)
	if err := rdb.Del(ctx, protocol.FenceKey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	r3, err = c.TryObtainRead(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Token() <= w.Token() {
		t.Fatalf("a reader after the counter went reports token %d, want above the last write's %d", r3.Token(), w.Token())
	}
	w2, err := c.TryObtainWrite(ctx, key+":2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, r3, w2)
	waitGone(t, rdb, key, time.Second)
}

// FIFO: readers that keep overlapping (so the lock is never free of readers) do not starve
// a writer: once it queues, new readers queue behind it, and it gets in when the readers
// already in leave. The readers behind it then get in together.
func TestRWWriterNotStarvedByReaders(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	writer, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:stream"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int32
	var writing atomic.Bool
	for i := range 4 {
		wg.Go(func() {
			// Staggered by a quarter of a hold each: three readers or more hold at every
			// instant, so without FIFO the writer would never find the lock free.
			time.Sleep(time.Duration(i) * 10 * time.Millisecond)
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.ObtainRead(ctx, key, 5*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if writing.Load() {
					t.Error("a reader got in while the writer held the lock")
				}
				reads.Add(1)
				time.Sleep(40 * time.Millisecond)
				mustRelease(t, r)
			}
		})
	}
	for reads.Load() < 8 {
		time.Sleep(5 * time.Millisecond)
	}
	begin := time.Now()
	w, err := writer.ObtainWrite(testCtx(t, 2*time.Second), key, 5*time.Second)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("the writer starved behind a stream of readers: %v (%d reads)", err, reads.Load())
	}
	writing.Store(true)
	waited := time.Since(begin)
	before := reads.Load()
	time.Sleep(100 * time.Millisecond)
	if got := reads.Load(); got != before {
		t.Errorf("%d reads finished while the writer held the lock", got-before)
	}
	writing.Store(false)
	mustRelease(t, w)
	for reads.Load() < before+4 {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if waited > time.Second {
		t.Errorf("the writer waited %v for readers that hold 40ms each", waited)
	}
	t.Logf("writer waited %v behind the readers already in", waited)
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("the lease set outlived every holder")
	}
}

// Re-entry counts members per owner; a write holder's read is a downgrade; a read holder's
// write is refused with ErrUpgrade.
func TestRWReentryDowngradeUpgrade(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:reentry"
	job := Reentrant("job")
	w1 := mustObtainMode(t, c.ObtainWrite, ctx, key, job)
	w2 := mustObtainMode(t, c.ObtainWrite, ctx, key, job)
	if w2.Token() != w1.Token() {
		t.Fatalf("a re-entered write reports token %d, the first level %d", w2.Token(), w1.Token())
	}
	r := mustObtainMode(t, c.ObtainRead, ctx, key, job) // at once: the owner writes
	if got := rwMembers(t, rdb, key); len(got[protocol.ModeWrite]) != 2 || len(got[protocol.ModeRead]) != 1 {
		t.Fatalf("members %v, want 2 write levels and 1 read level", got)
	}
	if r.Token() != w1.Token() {
		t.Fatalf("the downgrade's read reports token %d, want the write's %d", r.Token(), w1.Token())
	}
	if _, err := other.TryObtainRead(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another reader while the owner writes: %v", err)
	}
	mustRelease(t, w2)
	if _, err := other.TryObtainRead(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another reader while one write level is left: %v", err)
	}
	mustRelease(t, w1) // downgraded: the owner reads, others may read too
	r2, err := other.TryObtainRead(ctx, key, time.Second)
	if err != nil {
		t.Fatalf("another reader after the downgrade: %v", err)
	}
	if _, err := other.TryObtainWrite(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("a writer while two owners read: %v", err)
	}
	_, err = c.ObtainWrite(ctx, key, time.Second, job)
	if !errors.Is(err, ErrUpgrade) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("upgrade: %v, want ErrUpgrade and ErrInvalid", err)
	}
	r3 := mustObtainMode(t, c.ObtainRead, ctx, key, job) // re-entered read, with a writer queued or not
	mustRelease(t, r, r3, r2)
	waitGone(t, rdb, key, time.Second)
	if n := rdb.Exists(ctx, protocol.WaitQueueKey(key)).Val(); n != 0 {
		t.Fatal("the refused upgrade left its queue entry")
	}
}

func mustObtainMode(t *testing.T, obtain func(context.Context, string, time.Duration, ...LockOption) (*Lock, error),
	ctx context.Context, key string, opts ...LockOption,
) *Lock {
	t.Helper()
	return mustObtainModeTTL(t, obtain, ctx, key, 10*time.Second, opts...)
}

// A reader that crashed (never released, no watchdog) blocks a writer until its own lease
// runs out, not the longest lease in the set.
func TestRWCrashedReaderFreesAtItsTTL(t *testing.T) {
	srv := redistest.Start(t)
	crashed, rdb := newTestClient(t, srv)
	c, _ := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:crash"
	const ttl = 400 * time.Millisecond
	long, err := c.TryObtainRead(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := crashed.TryObtainRead(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	deadline := leaseDeadline(t, rdb, r)
	mustRelease(t, long) // the set's TTL now follows the crashed reader alone
	w, err := c.ObtainWrite(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	grantedAtExpiry(t, w, deadline)
	if got := rwMembers(t, rdb, key); len(got[protocol.ModeRead]) != 0 || len(got[protocol.ModeWrite]) != 1 {
		t.Fatalf("members %v, want the writer alone", got)
	}
	mustRelease(t, w)
}

// The watchdog renews each member on its own; a member removed behind its holder's back is
// lost at its next renewal, and the others keep theirs.
func TestRWWatchdogAndLost(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:dog"
	a := mustObtainModeTTL(t, c.ObtainRead, ctx, key, 300*time.Millisecond, WithWatchdog())
	b := mustObtainModeTTL(t, c.ObtainRead, ctx, key, 300*time.Millisecond, WithWatchdog())
	time.Sleep(700 * time.Millisecond)
	for _, l := range []*Lock{a, b} {
		if l.Err() != nil {
			t.Fatalf("a watched reader was lost: %v", l.Err())
		}
	}
	if err := rdb.ZRem(ctx, key, a.Value()).Err(); err != nil {
		t.Fatal(err)
	}
	waitLost(t, a, time.Second, "after its member was removed", ErrNotHeld)
	if err := b.Refresh(ctx, time.Second); err != nil {
		t.Fatalf("the other reader: %v", err)
	}
	if d, err := b.TTL(ctx); err != nil || d < 900*time.Millisecond {
		t.Fatalf("TTL after Refresh(1s) = %v, %v", d, err)
	}
	mustRelease(t, b)
}

func mustObtainModeTTL(t *testing.T, obtain func(context.Context, string, time.Duration, ...LockOption) (*Lock, error),
	ctx context.Context, key string, ttl time.Duration, opts ...LockOption,
) *Lock {
	t.Helper()
	l, err := obtain(ctx, key, ttl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Duplicate delivery: an acquire and a release whose replies were lost ran twice on the
// server (go-redis sent them again); the outcome is the same as once: one member, one
// release. A refresh run twice leaves the latest deadline.
func TestRWRequestsRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:twice"
	for _, obtain := range []func(context.Context, string, time.Duration, ...LockOption) (*Lock, error){
		c.TryObtainWrite, c.ObtainRead, c.ObtainWrite,
	} {
		fired := f.DropReply(isScript(scriptRWAcquire))
		l, err := obtain(ctx, key, 10*time.Second)
		<-fired
		if err != nil {
			t.Fatalf("an acquire whose first reply was lost: %v", err)
		}
		got := rwMembers(t, rdb, key)
		if n := len(got[protocol.ModeRead]) + len(got[protocol.ModeWrite]); n != 1 {
			t.Fatalf("members %v after one acquire run twice, want 1", got)
		}
		if m, _ := protocol.ParseLeaseMember(l.Value()); m.Mode == protocol.ModeWrite && l.Token() <= 0 {
			t.Fatalf("write token %d", l.Token())
		}
		fired = f.DropReply(isScript(scriptLeaseRefresh))
		if err := l.Refresh(ctx, 20*time.Second); err != nil {
			t.Fatalf("a refresh whose first reply was lost: %v", err)
		}
		<-fired
		fired = f.DropReply(isScript(scriptLeaseRelease))
		if err := l.Release(ctx); err != nil {
			t.Fatalf("a release whose first reply was lost: %v, want nil", err)
		}
		<-fired
		mustBeFreeWithin(t, rdb, key, 0)
	}
}

// A late acquire: the Obtain gave up (its context ended) while its acquire was held on the
// way; when that acquire runs, the operation has ended (lease_leave.lua) and it takes
// nothing.
func TestRWLateAcquireTakesNothing(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	other, _ := newTestClient(t, fx.srv)
	const key = "lock:rw:late"
	for _, obtain := range []func(context.Context, string, time.Duration, ...LockOption) (*Lock, error){
		c.ObtainWrite, c.TryObtainRead,
	} {
		fired := f.DelayRequest(isScriptWith(scriptRWAcquire, "late"), 400*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		l, err := obtain(ctx, key, 20*time.Second, WithTrace("late"))
		cancel()
		if err == nil {
			_ = l.Release(context.Background())
			t.Fatal("Obtain returned a lease after its context ended")
		}
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrNotObtained and the context's error", err)
		}
		<-fired                            // the acquire was delayed: not merely never sent
		time.Sleep(500 * time.Millisecond) // the delayed acquire has run
		if got := rwMembers(t, rdb, key); len(got) != 0 {
			t.Fatalf("the late acquire took %v for nobody", got)
		}
		w, err := other.TryObtainWrite(context.Background(), key, time.Second)
		if err != nil {
			t.Fatalf("a writer after the late acquire: %v", err)
		}
		mustRelease(t, w)
	}
	// The ended set alone (without the clean-up that a late "taken" answer triggers): a
	// copy of an acquire that runs after its operation left takes nothing.
	s := c.store.(*singleStore)
	for _, k := range []kind{kindRead, kindWrite} {
		req := acquireRequest{kind: k, key: key, value: c.newValue(key, lockConfig{}), ttl: 20 * time.Second,
			op: c.nextOpID(), start: time.Now()}
		if err := s.leaveLease(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if res, err := s.acquire(context.Background(), req); err == nil || res.acquired {
			t.Fatalf("a %v acquire of an ended operation: %+v, %v; want it refused", k.mode(), res, err)
		}
		if got := rwMembers(t, rdb, key); len(got) != 0 {
			t.Fatalf("an acquire of an ended operation took %v", got)
		}
	}
}

// Events of a read-write lock carry the mode, and their value is the member.
func TestRWEvents(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	sub := rdb.Subscribe(ctx, protocol.EventsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const key = "lock:rw:events"
	r, err := c.ObtainRead(ctx, key, time.Second, WithTrace("t-r"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lock, 1)
	go func() {
		w, err := c.ObtainWrite(ctx, key, time.Second, WithTrace("t-w"))
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	waitForWaiters(t, rdb, key, 1)
	if err := r.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, r)
	w := <-got
	if w == nil {
		t.FailNow()
	}
	mustRelease(t, w)
	want := []struct {
		typ, mode, value, trace string
		token                   int64
	}{
		{"acquired", "read", r.Value(), "t-r", r.Token()},
		{"waiting", "write", "", "t-w", 0},
		{"renewed", "read", r.Value(), "t-r", 0},
		{"released", "read", r.Value(), "t-r", 0},
		{"acquired", "write", w.Value(), "t-w", w.Token()},
		{"released", "write", w.Value(), "t-w", 0},
	}
	for _, e := range want {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ev protocol.Event
		if err := json.Unmarshal([]byte(msg.Payload), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != e.typ || ev.Mode != e.mode || ev.Value != e.value || ev.Trace != e.trace || ev.Token != e.token || ev.Key != key {
			t.Fatalf("event %s, want %+v", msg.Payload, e)
		}
	}
}

// clusterRW checks a read-write lock on a Redis Cluster (TestRedisCluster's): the lease set
// and its companions share a slot, and a writer queued on one client is woken by a reader's
// release on another.
func clusterRW(t *testing.T, a, b *Client) {
	ctx := testCtx(t, 10*time.Second)
	for _, key := range []string{"lock:rw:cluster", "lock:{rw}:cluster"} {
		r, err := a.ObtainRead(ctx, key, time.Second, WithWatchdog())
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		r2, err := b.TryObtainRead(ctx, key, time.Second)
		if err != nil {
			t.Fatalf("%s: a second reader: %v", key, err)
		}
		got := make(chan *Lock, 1)
		go func() {
			w, err := b.ObtainWrite(ctx, key, time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		time.Sleep(50 * time.Millisecond)
		if err := r.Refresh(ctx, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		mustRelease(t, r, r2)
		w := <-got
		if w == nil {
			t.FailNow()
		}
		if w.Token() <= 0 {
			t.Fatalf("%s: write token %d", key, w.Token())
		}
		mustRelease(t, w)
	}
	if _, err := a.TryObtainRead(ctx, "lock:a}b", time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a key whose companions are in another slot: %v, want ErrInvalid", err)
	}
}

// A read-write lock's script that fails on a companion of the wrong type has changed
// nothing (TestFailedScriptWritesNothing for the lease-set scripts).
func TestRWFailedScriptWritesNothing(t *testing.T) {
	companions := map[string]func(string) string{"fence": protocol.FenceKey, "queue": protocol.WaitQueueKey,
		"presence": protocol.WaitPresenceKey, "ended": protocol.EndedKey}
	reader := func(t *testing.T, c *Client, key string) *Lock {
		return mustObtainModeTTL(t, c.ObtainRead, context.Background(), key, 10*time.Second)
	}
	paths := map[string]wrongTypePath{
		"TryObtainRead": {nil, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtainRead(context.Background(), key, 10*time.Second))
		}},
		"TryObtainWrite": {nil, func(c *Client, key string, _ *Lock) error {
			return tryAndRelease(c.TryObtainWrite(context.Background(), key, 10*time.Second))
		}},
		"ObtainWrite behind a reader": {reader, func(c *Client, key string, _ *Lock) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			return tryAndRelease(c.ObtainWrite(ctx, key, 10*time.Second))
		}},
		"Release read": {reader, func(_ *Client, _ string, held *Lock) error { return held.Release(context.Background()) }},
	}
	checkWrongTypeCompanions(t, "lock:rw:wrong-type:", companions, paths)
}

// A writer's release admits every reader queued behind it at once: the release wakes each
// (no poll: the back-off here is seconds; no chain of wake-ups either), and they hold
// together.
func TestRWReleaseAdmitsQueuedReadersTogether(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rw:admit"
	w := mustObtainMode(t, c.ObtainWrite, ctx, key)
	const readers = 4
	got := make(chan *Lock, readers)
	for i := range readers {
		r, _ := newTestClient(t, srv, WithBackoff(2*time.Second, 4*time.Second))
		go func() {
			l, err := r.ObtainRead(ctx, key, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		waitForWaiters(t, rdb, key, i+1)
		waitWakeSubscription(t, rdb, r)
	}
	// The server's messages in the order it published them, on one connection: the
	// release script publishes its wake-ups, then its released event.
	sub := rdb.PSubscribe(ctx, protocol.WakeChannelPrefix+"*")
	defer sub.Close()
	if err := sub.Subscribe(ctx, protocol.EventsChannel); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil { // both subscriptions confirmed
			t.Fatal(err)
		}
	}
	begin := time.Now()
	mustRelease(t, w)
	woken := 0
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Channel == protocol.EventsChannel {
			if strings.Contains(msg.Payload, `"type":"released"`) {
				break
			}
			continue
		}
		woken++
	}
	if woken != readers {
		t.Fatalf("the release woke %d of the %d queued readers, want all at once", woken, readers)
	}
	var held []*Lock
	for range readers {
		l := <-got
		if l == nil {
			t.FailNow()
		}
		held = append(held, l)
	}
	if took := time.Since(begin); took > 500*time.Millisecond {
		t.Fatalf("the queued readers got in %v after the writer left: not woken", took)
	}
	if n := len(rwMembers(t, rdb, key)[protocol.ModeRead]); n != readers {
		t.Fatalf("%d readers hold together, want %d", n, readers)
	}
	for _, l := range held {
		if l.Token() != w.Token() {
			t.Fatalf("a reader after the write reports token %d, want %d", l.Token(), w.Token())
		}
	}
	mustRelease(t, held...)
}

// checkRWReplicated is TestWithReplicas for a read-write lock: with the replicas answering,
// a read and a write lease are on them when the Obtains return and renew with their
// confirmation; with one frozen, TryObtainWrite is refused (ErrNotObtained, ErrNotReplicated)
// and keeps nothing.
func checkRWReplicated(t *testing.T, c *Client, rdb *redis.Client, replicas []*redistest.Server, frozen bool) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:rep:rw"
	if frozen {
		var re *ReplicationError
		if _, err := c.TryObtainWrite(ctx, key, 5*time.Second); !errors.Is(err, ErrNotObtained) || !errors.As(err, &re) || re.Acked != 1 {
			t.Fatalf("TryObtainWrite with a replica frozen: %v, want ErrNotObtained and ErrNotReplicated, 1 acked", err)
		}
		waitGone(t, rdb, key, 2*time.Second)
		return
	}
	for _, obtain := range []func(context.Context, string, time.Duration, ...LockOption) (*Lock, error){c.ObtainRead, c.ObtainWrite} {
		l, err := obtain(ctx, key, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range replicas {
			if _, err := n.Client().ZScore(ctx, key, l.Value()).Result(); err != nil {
				t.Fatalf("replica %s right after the Obtain: member %q: %v", n.Addr, l.Value(), err)
			}
		}
		if err := l.Refresh(ctx, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		mustRelease(t, l)
	}
}

// A key is one kind of lock: a read-write lock on a plain lock's key, or the other way
// round, fails with ErrBackend and changes nothing.
func TestRWOnALockKeyFails(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:kinds:plain", 10*time.Second)
	if _, err := c.TryObtainRead(ctx, "lock:kinds:plain", time.Second); !errors.Is(err, ErrBackend) {
		t.Fatalf("TryObtainRead on a plain lock's key: %v, want ErrBackend", err)
	}
	r := mustObtainMode(t, c.ObtainRead, ctx, "lock:kinds:rw")
	if _, err := c.TryObtain(ctx, "lock:kinds:rw", time.Second); !errors.Is(err, ErrBackend) {
		t.Fatalf("TryObtain on a read-write lock's key: %v, want ErrBackend", err)
	}
	if v := rdb.Get(ctx, "lock:kinds:plain").Val(); v != l.Value() {
		t.Fatalf("the plain lock holds %q, want %q", v, l.Value())
	}
	if got := rwMembers(t, rdb, "lock:kinds:rw"); len(got[protocol.ModeRead]) != 1 {
		t.Fatalf("members %v, want the one reader", got)
	}
	mustRelease(t, l, r)
}
