package locklib

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// redlockFixture is N real redis-server processes and a client for each.
type redlockFixture struct {
	servers []*redistest.Server
	clients []redis.UniversalClient
}

func newRedlockFixture(t *testing.T, n int) *redlockFixture {
	t.Helper()
	f := &redlockFixture{servers: redistest.StartN(t, n)}
	for _, s := range f.servers {
		f.clients = append(f.clients, s.Client())
	}
	f.warmUp(t)
	return f
}

// warmUp loads the scripts and opens a few connections to every instance, so that the
// first attempts of a test do not pay for dialing and NOSCRIPT (hundreds of ms under -race
// on a loaded machine, beyond the per-instance timeout).
func (f *redlockFixture) warmUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, c := range f.clients {
		for _, script := range []*redis.Script{scriptRedlockReentrant, scriptRedlockRelease, scriptRefresh.Script, scriptPTTL.Script} {
			if err := script.Load(ctx, c).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for _, c := range f.clients {
		for range 8 {
			wg.Go(func() { _ = c.Ping(ctx).Err() })
		}
	}
	wg.Wait()
}

// store is a Redlock store on the fixture's instances. The store-level tests are not about
// timeouts: a generous instance timeout keeps them steady on a loaded machine.
func (f *redlockFixture) store(t *testing.T, opts ...RedlockOption) *redlockStore {
	t.Helper()
	s, err := newRedlockStore(f.clients, newConfig(append([]RedlockOption{WithInstanceTimeout(time.Second)}, opts...)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	return s
}

// holders counts the instances on which key holds exactly value.
func (f *redlockFixture) holders(t *testing.T, key, value string) int {
	t.Helper()
	n := 0
	for i, s := range f.servers {
		if !s.Running() {
			continue
		}
		got, err := f.clients[i].Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("GET on %s: %v", s.Addr, err)
		}
		if got == value {
			n++
		}
	}
	return n
}

func redlockTestValue() protocol.Value { return protocol.NewValue("test-node", "trace-1", time.Now()) }

// redlockMustAcquire retries req (as Obtain would) until it is acquired, and returns the
// result and the start of the successful attempt.
func redlockMustAcquire(t *testing.T, s *redlockStore, req acquireRequest) (acquireResult, time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req.start = time.Now()
		res, err := s.acquire(context.Background(), req)
		if err != nil {
			t.Fatalf("acquire %q: %v", req.key, err)
		}
		if res.acquired {
			return res, req.start
		}
		if time.Now().After(deadline) {
			t.Fatalf("acquire %q: not obtained within 10s: %+v", req.key, res)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRedlockStoreValidityDeadline(t *testing.T) {
	f := newRedlockFixture(t, 5)
	s := f.store(t)
	ttl := 2 * time.Second
	drift := time.Duration(float64(ttl)*defaultRedlockDriftFactor) + defaultRedlockDriftFixed
	// Like Obtain, every attempt gets the same template value: each must store its own
	// (a failed attempt's late clean-up must never match a later attempt's key).
	template := redlockTestValue()
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		req := acquireRequest{key: "lock:v", value: template, ttl: ttl, op: fmt.Sprintf("test:%d", i)}
		res, start := redlockMustAcquire(t, s, req)
		if limit := start.Add(ttl - drift); res.validUntil.After(limit) {
			t.Fatalf("validUntil %v is later than start + ttl - drift %v", res.validUntil, limit)
		}
		if v, err := protocol.ParseValue(res.value); err != nil || v.Node != template.Node || v.Trace != template.Trace || seen[res.value] {
			t.Fatalf("attempt %d stored %q (seen before: %v): want the template's node and trace, a fresh random part", i, res.value, seen[res.value])
		}
		seen[res.value] = true
		if err := s.release(context.Background(), req.hold(res)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRedlockStoreReentrant(t *testing.T) {
	f := newRedlockFixture(t, 3)
	s := f.store(t)
	ctx := context.Background()
	v := redlockTestValue()
	var levels []hold
	for want := 1; want <= 3; want++ {
		req := acquireRequest{key: "lock:r", value: v, ttl: 2 * time.Second, reentrant: true, op: fmt.Sprintf("test:%d", want)}
		res, _ := redlockMustAcquire(t, s, req)
		if got, _ := protocol.ParseValue(res.value); got.Count != want || got.Base() != v.Base() {
			t.Fatalf("entry %d stored %q", want, res.value)
		}
		levels = append(levels, req.hold(res))
	}
	stranger := acquireRequest{key: "lock:r", value: redlockTestValue(), ttl: 2 * time.Second, reentrant: true, op: "test:stranger"}
	if res, err := s.acquire(ctx, stranger); err != nil || res.acquired || res.holderTTL <= 0 {
		t.Fatalf("another owner = %+v, %v; want refused with the holder's TTL", res, err)
	}
	if err := s.release(ctx, stranger.hold(acquireResult{value: stranger.value.String(), level: stranger.op})); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("another owner's release: %v, want ErrNotHeld", err)
	}
	for i, h := range levels {
		if err := s.release(ctx, h); err != nil {
			t.Fatalf("release of level %d: %v", i+1, err)
		}
		if left := len(levels) - 1 - i; left > 0 && f.holders(t, "lock:r", v.Base()+fmt.Sprintf(":%d", left)) != 3 {
			t.Fatalf("after %d releases the instances do not all hold count %d", i+1, left)
		}
	}
	redistest.Eventually(t, "the key gone after the last level", func() bool { return f.holders(t, "lock:r", v.Base()+":1") == 0 })
}

// A re-entry attempt's undo may reach an instance before the attempt itself (a request stuck
// on its way after its caller gave up on it, overtaken by the undo on another connection):
// the undo ends the attempt's level there, so the attempt that arrives later takes nothing.
// Otherwise it added a level nobody holds, and the owner's last Release left the key behind.
func TestRedlockStoreAttemptAfterItsUndoTakesNothing(t *testing.T) {
	f := newRedlockFixture(t, 3)
	s := f.store(t)
	ctx := context.Background()
	const key = "lock:r:overtaken"
	v := redlockTestValue()
	first := acquireRequest{key: key, value: v, ttl: 10 * time.Second, reentrant: true, op: "test:1"}
	res, _ := redlockMustAcquire(t, s, first)
	entry := v
	entry.Count = 1
	a := &redlockAttempt{store: s, key: key, value: entry.String(), rand: v.Rand, op: "test:2." + protocol.NewValue("n", "", time.Now()).Rand, reentrant: true}
	var unknown []acquireReply
	for i := range f.clients {
		unknown = append(unknown, acquireReply{index: i, outcome: acquireUnknown})
	}
	s.undo(a, unknown) // the attempt failed with no answer: its undo runs first
	for i := range f.clients {
		if r := s.acquireOn(ctx, a, i, 10*time.Second); r.outcome != acquireRefused {
			t.Fatalf("instance %d: the attempt arriving after its undo = %+v, want refused", i, r)
		}
	}
	if n := f.holders(t, key, v.Base()+":1"); n != 3 {
		t.Fatalf("%d of 3 instances still count 1 level", n)
	}
	if err := s.release(ctx, first.hold(res)); err != nil {
		t.Fatal(err)
	}
	if n := f.present(t, key); n != 0 {
		t.Fatalf("the only level released, but %d instance(s) still hold %s", n, key)
	}
}

func TestRedlockStoreRefreshNeedsQuorum(t *testing.T) {
	redistest.Slow(t)
	f := newRedlockFixture(t, 5)
	s := f.store(t)
	ctx := context.Background()
	v := redlockTestValue()
	res, _ := redlockMustAcquire(t, s, acquireRequest{key: "lock:f", value: v, ttl: 2 * time.Second})
	// acquire returns at a quorum; wait for the last SETs (go-redis would even resend one to
	// a restarted instance), so that the faults below hit a lock on all 5.
	redistest.Eventually(t, "the value on all 5", func() bool { return f.holders(t, "lock:f", res.value) == 5 })
	before := time.Now()
	h := hold{key: "lock:f", match: res.value}
	until, err := s.refresh(ctx, h, 3*time.Second)
	if err != nil || !until.After(before.Add(2*time.Second)) {
		t.Fatalf("refresh = %v, %v", until, err)
	}
	// Two instances lose the key (restarted empty): a quorum of three still has it.
	f.servers[0].Restart()
	f.servers[1].Restart()
	if _, err := s.refresh(ctx, h, 3*time.Second); err != nil {
		t.Fatalf("refresh with 3 of 5 holding: %v", err)
	}
	// A third one down: no quorum, an error that is not ErrNotHeld (unknown, not refused).
	f.servers[2].Kill()
	if _, err := s.refresh(ctx, h, 3*time.Second); err == nil || errors.Is(err, ErrNotHeld) {
		t.Fatalf("refresh with a quorum down: %v, want a backend error", err)
	}
	// Someone else's value: refused everywhere it answers.
	if _, err := s.refresh(ctx, hold{key: "lock:f", match: redlockTestValue().String()}, 3*time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("refresh by a stranger: %v, want ErrNotHeld", err)
	}
}

func TestRedlockStoreWakeups(t *testing.T) {
	f := newRedlockFixture(t, 3)
	s := f.store(t)
	first, stopFirst := s.wakeups("lock:w")
	defer stopFirst()
	second, stopSecond := s.wakeups("lock:w")
	defer stopSecond()
	other, stopOther := s.wakeups("lock:other")
	defer stopOther()
	ctx := context.Background()
	// The subscriptions start in the background: publish until the first message lands.
	deadline := time.After(5 * time.Second)
	for i := 0; ; i++ {
		if err := f.clients[2].Publish(ctx, protocol.RedlockReleasedChannel, fmt.Sprintf("lock:w\nprobe-%d", i)).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-first:
		case <-time.After(20 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("no wake-up from instance 2")
		}
		break
	}
	time.Sleep(50 * time.Millisecond) // let every subscription come up and the probes drain
	redlockDrain(first)
	select {
	case <-second:
		t.Fatal("a release woke the second waiter too: want only the longest-waiting one")
	case <-other:
		t.Fatal("a waiter of another key was woken")
	default:
	}
	// A real release reaches the Client once per instance: it wakes the first waiter, never
	// the second. (The quorum-th copy may wake the first once more, in case its woken attempt
	// lost the race with the slower deletes: TestRedlockWakeupsQuorumCopyWakesAgain counts.)
	v := redlockTestValue()
	res, _ := redlockMustAcquire(t, s, acquireRequest{key: "lock:w", value: v, ttl: 2 * time.Second})
	if err := s.release(ctx, hold{key: "lock:w", match: res.value}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(3 * time.Second):
		t.Fatal("release did not wake the waiter")
	}
	time.Sleep(100 * time.Millisecond) // the copies from the other instances arrive
	redlockDrain(first)
	select {
	case <-second:
		t.Fatal("one release woke the second waiter")
	case <-other:
		t.Fatal("a release woke a waiter of another key")
	default:
	}
	// Once the first waiter leaves, the next release wakes the second.
	stopFirst()
	if err := f.clients[0].Publish(ctx, protocol.RedlockReleasedChannel, "lock:w\nanother-holder").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(3 * time.Second):
		t.Fatal("the second waiter was not woken after the first left")
	}
}

func redlockDrain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
