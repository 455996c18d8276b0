package locklib

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// client is a Redlock Client on the fixture's instances, closed when the test ends (before
// the servers stop: cleanups run last-in first-out).
func (f *redlockFixture) client(t *testing.T, opts ...RedlockOption) *Client {
	t.Helper()
	c, err := NewRedlock(f.clients, append([]RedlockOption{WithNode("test")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// present counts the running instances on which key exists, whatever its value.
func (f *redlockFixture) present(t *testing.T, key string) int {
	t.Helper()
	n := 0
	for i, s := range f.servers {
		if !s.Running() {
			continue
		}
		exists, err := f.clients[i].Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("EXISTS on %s: %v", s.Addr, err)
		}
		n += int(exists)
	}
	return n
}

func TestRedlockAllUp(t *testing.T) {
	f := newRedlockFixture(t, 5)
	c := f.client(t)
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:rl:up", 2*time.Second, WithTrace("t-up"))
	if l.Token() != 0 {
		t.Fatalf("Token() = %d: Redlock has no safe fencing token, want 0", l.Token())
	}
	if v, err := protocol.ParseValue(l.Value()); err != nil || v.Node != "test" || v.Trace != "t-up" {
		t.Fatalf("value %q decodes to %+v, %v", l.Value(), v, err)
	}
	redistest.Eventually(t, "the value on all 5 instances", func() bool { return f.holders(t, l.Key(), l.Value()) == 5 })
	if d, err := l.TTL(ctx); err != nil || d <= 0 || d > 2*time.Second {
		t.Fatalf("TTL = %v, %v; want within (0, 2s]", d, err)
	}
	if _, err := c.TryObtain(ctx, l.Key(), time.Second); !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrBackend) {
		t.Fatalf("TryObtain of a held lock: %v, want ErrNotObtained only", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := l.TTL(ctx); err != nil || d != 0 {
		t.Fatalf("TTL after Release = %v, %v; want 0", d, err)
	}
	// Release returns once a quorum let go; the others follow at once.
	redistest.Eventually(t, "the key gone from all 5", func() bool { return f.present(t, l.Key()) == 0 })
}

func TestRedlockTwoOfFiveKilled(t *testing.T) {
	f := newRedlockFixture(t, 5)
	c := f.client(t)
	f.servers[0].Kill()
	f.servers[3].Kill()
	ctx := testCtx(t, 10*time.Second)
	l, err := c.Obtain(ctx, "lock:rl:two", 2*time.Second)
	if err != nil {
		t.Fatalf("Obtain with 3 of 5 up: %v", err)
	}
	if n := f.holders(t, l.Key(), l.Value()); n != 3 {
		t.Fatalf("held on %d live instances, want all 3", n)
	}
	if err := l.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatalf("Refresh with 3 of 5 up: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the key gone from the 3 live instances", func() bool { return f.present(t, l.Key()) == 0 })
}

func TestRedlockThreeOfFiveKilled(t *testing.T) {
	f := newRedlockFixture(t, 5)
	c := f.client(t)
	for _, s := range f.servers[:3] {
		s.Kill()
	}
	// A failure that waited for the context would take its full minute: the 15 s ceiling
	// below tells the two apart on any machine, however loaded.
	ctx := testCtx(t, time.Minute)
	begin := time.Now()
	_, err := c.Obtain(ctx, "lock:rl:three", 2*time.Second)
	// ErrBackend only: the switch in docs/locklib.md tests ErrNotObtained first, and a
	// Redis that is down is not "taken, or the context ended".
	if errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrBackend) {
		t.Fatalf("Obtain with 2 of 5 up: %v, want ErrBackend and not ErrNotObtained", err)
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Fatalf("Obtain took %v to fail: want prompt, not a wait for the context", took)
	}
	if n := f.present(t, "lock:rl:three"); n != 0 {
		t.Fatalf("the failed attempt left its key on %d of the 2 live instances", n)
	}
}

func TestRedlockOnePaused(t *testing.T) {
	f := newRedlockFixture(t, 5)
	// The frozen instance's client waits a minute for a reply, so a call that waited for it
	// instead of the per-instance timeout (105ms here) would take the test's whole context:
	// the 10 s ceilings below tell the two apart on any machine, however loaded.
	f.clients[2] = f.servers[2].Client(func(o *redis.Options) { o.ReadTimeout, o.WriteTimeout = time.Minute, time.Minute })
	c := f.client(t)
	f.servers[2].Pause()
	defer f.servers[2].Resume()
	ctx := testCtx(t, 30*time.Second)
	begin := time.Now()
	l, err := c.Obtain(ctx, "lock:rl:paused", 2*time.Second)
	if err != nil {
		t.Fatalf("Obtain with one instance frozen: %v", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("Obtain took %v with one instance frozen", took)
	}
	begin = time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with one instance frozen: %v", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("Release took %v with one instance frozen", took)
	}
}

// A lock obtained on 3 of 5 while the SETs to the other two are still out (those instances
// are frozen), then one of the three killed: its release confirms 2 of 5 and must still
// succeed, because the two late SETs are deleted when they answer.
func TestRedlockReleaseCountsSetsStillOut(t *testing.T) {
	redistest.Slow(t)
	f := newRedlockFixture(t, 5)
	// Long enough that the frozen instances' SETs are still out when Release runs.
	c := f.client(t, WithInstanceTimeout(5*time.Second))
	f.servers[3].Pause()
	f.servers[4].Pause()
	resumed := false
	defer func() {
		if !resumed {
			f.servers[3].Resume()
			f.servers[4].Resume()
		}
	}()
	ctx := testCtx(t, 20*time.Second)
	l, err := c.Obtain(ctx, "lock:rl:late", 10*time.Second)
	if err != nil {
		t.Fatalf("Obtain with two instances frozen: %v", err)
	}
	f.servers[2].Kill()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with 2 confirmed, 1 dead and 2 SETs still out: %v", err)
	}
	f.servers[3].Resume()
	f.servers[4].Resume()
	resumed = true
	// The late SETs land when the instances thaw, and their answers delete them.
	redistest.Eventually(t, "late SETs undone", func() bool { return f.present(t, "lock:rl:late") == 0 })
}

func TestRedlockMutualExclusionWithRestart(t *testing.T) {
	redistest.Slow(t)
	f := newRedlockFixture(t, 5)
	// Two clients, as two processes would be; a generous instance timeout for a loaded
	// machine under -race (the dead instance does not cost it: it is known down).
	a := f.client(t, WithInstanceTimeout(time.Second))
	b := f.client(t, WithInstanceTimeout(time.Second))
	const ttl = 2 * time.Second
	ctx := testCtx(t, 40*time.Second)
	var d overlapDetector
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 16 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// The lock held when an instance is killed may have had its quorum on
				// exactly that one and two others, with the SETs on the last two still
				// out: its release confirms 2 of 5 and must still succeed, because those
				// late SETs are undone when they answer.
				if !d.critical(t, ctx, c, "lock:rl:mutex", ttl, time.Millisecond) {
					return
				}
			}
		})
	}
	waitSections := func(n int32) {
		for d.sections.Load() < n && !t.Failed() && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitSections(40)
	// Kill one instance and restart it empty only after the ttl, as Redlock requires (a
	// lock it held must not outlive its validity on the others): then 4 of 5 go on, and
	// the restarted one rejoins with no memory of the lock.
	f.servers[1].Kill()
	before := d.sections.Load()
	time.Sleep(ttl + 200*time.Millisecond)
	waitSections(before + 10) // the 4 left carry on (however slow the machine is)
	f.servers[1].Restart()
	after := d.sections.Load()
	waitSections(after + 40)
	close(stop)
	wg.Wait()
	if d.overlaps.Load() != 0 {
		t.Fatalf("%d overlapping critical sections in %d", d.overlaps.Load(), d.sections.Load())
	}
	if after-before < 10 {
		t.Fatalf("%d sections while an instance was down, want 10 or more", after-before)
	}
	t.Logf("%d sections, %d while an instance was down", d.sections.Load(), after-before)
}

func TestRedlockStaleMinorityExpires(t *testing.T) {
	f := newRedlockFixture(t, 5)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:rl:stale"
	// A crashed client left keys on a minority for a long time (its acquisition failed
	// half-way), and another crashed client holds the majority briefly.
	stale := redlockTestValue().String()
	for _, rdb := range f.clients[:2] {
		if err := rdb.Set(ctx, key, stale, 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	crashed := f.client(t)
	held, err := crashed.Obtain(ctx, key, time.Second)
	if err != nil {
		t.Fatalf("the first client takes the 3 free instances: %v", err)
	}
	expires := time.Now().Add(900 * time.Millisecond) // its keys were set after Obtain began
	c := f.client(t)
	l, err := c.Obtain(ctx, key, 2*time.Second)
	if err != nil {
		t.Fatalf("a new quorum once the majority's keys expired: %v", err)
	}
	if time.Now().Before(expires) {
		t.Fatal("obtained before the crashed holder's keys expired")
	}
	if n := f.holders(t, key, l.Value()); n != 3 {
		t.Fatalf("new lock on %d instances, want the 3 without stale keys", n)
	}
	if n := f.holders(t, key, stale); n != 2 {
		t.Fatalf("stale keys on %d instances, want them untouched on 2", n)
	}
	<-held.Lost() // the crashed client's lock presumed lost at its validity deadline
	if !errors.Is(held.Err(), ErrValidityPassed) {
		t.Fatalf("crashed lock: %v", held.Err())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Instances slower than the lock's validity: every SET succeeds, but by the time a quorum
// answered the ttl minus drift has passed, so the lock is not obtained (and undone).
func TestRedlockValidityConsumedBySlowInstances(t *testing.T) {
	servers := redistest.StartN(t, 3)
	var clients []redis.UniversalClient
	for _, s := range servers {
		p := redistest.NewProxy(t, s.Addr)
		p.SetDelay(60 * time.Millisecond) // each way: a round trip takes 120ms or more
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		clients = append(clients, rdb)
	}
	c, err := NewRedlock(clients, WithInstanceTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t, 10*time.Second)
	_, err = c.TryObtain(ctx, "lock:rl:slow", 100*time.Millisecond)
	if !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrBackend) {
		t.Fatalf("TryObtain with a 100ms ttl over 120ms round trips: %v, want ErrNotObtained", err)
	}
	if l, err := c.TryObtain(ctx, "lock:rl:slow", 5*time.Second); err != nil {
		t.Fatalf("the same instances with a ttl that leaves validity: %v", err)
	} else if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockRefreshWithQuorumDown(t *testing.T) {
	f := newRedlockFixture(t, 5)
	c := f.client(t)
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:rl:refresh", time.Second)
	for _, s := range f.servers[2:] {
		s.Kill()
	}
	err := l.Refresh(ctx, time.Second)
	if !errors.Is(err, ErrBackend) || errors.Is(err, ErrNotHeld) {
		t.Fatalf("Refresh with 3 of 5 down: %v, want ErrBackend", err)
	}
	waitLost(t, l, 5*time.Second, "after the validity passed without a renewal", ErrLost, ErrValidityPassed)
}

func TestRedlockWatchdogWithQuorumDown(t *testing.T) {
	redistest.Slow(t)
	t.Run("killed", func(t *testing.T) {
		f := newRedlockFixture(t, 5)
		c := f.client(t)
		ctx := testCtx(t, 10*time.Second)
		l := mustObtain(t, c, ctx, "lock:rl:dog", 900*time.Millisecond, WithWatchdog(), WithMaxRenewals(0))
		time.Sleep(500 * time.Millisecond) // at least one renewal at ttl/3
		select {
		case <-l.Lost():
			t.Fatalf("lost while all instances were up: %v", l.Err())
		default:
		}
		for _, s := range f.servers[:3] {
			s.Kill()
		}
		waitLost(t, l, 5*time.Second, "with the quorum down", ErrValidityPassed)
	})
	t.Run("gone from a majority", func(t *testing.T) {
		f := newRedlockFixture(t, 5)
		c := f.client(t)
		ctx := testCtx(t, 10*time.Second)
		l := mustObtain(t, c, ctx, "lock:rl:dog", 900*time.Millisecond, WithWatchdog(), WithMaxRenewals(0))
		// Obtain returns at a quorum; the last SETs land a moment later.
		redistest.Eventually(t, "the value on all 5", func() bool { return f.holders(t, l.Key(), l.Value()) == 5 })
		// As after a restart without persistence (or an operator's DEL): the key vanishes.
		for _, rdb := range f.clients[:3] {
			if err := rdb.Del(ctx, l.Key()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		waitLost(t, l, 5*time.Second, "with the lock gone from 3 of 5", ErrNotHeld)
	})
}

func TestRedlockSingleInstance(t *testing.T) {
	f := newRedlockFixture(t, 1)
	c := f.client(t)
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:rl:one", time.Second)
	if _, err := c.TryObtain(ctx, l.Key(), time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock: %v", err)
	}
	if err := l.Refresh(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := l.TTL(ctx); err != nil || d <= 2*time.Second {
		t.Fatalf("TTL after Refresh = %v, %v", d, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Refresh after Release: %v", err)
	}
}

func TestRedlockReentrant(t *testing.T) {
	f := newRedlockFixture(t, 3)
	c := f.client(t)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:rl:reentrant"
	outer := mustObtain(t, c, ctx, key, 2*time.Second, Reentrant("job-42"))
	inner := mustObtain(t, c, ctx, key, 2*time.Second, Reentrant("job-42"))
	ov, _ := protocol.ParseValue(outer.Value())
	iv, _ := protocol.ParseValue(inner.Value())
	if ov.Count != 1 || iv.Count != 2 || ov.Base() != iv.Base() {
		t.Fatalf("values %q then %q: want the same base with counts 1 and 2", outer.Value(), inner.Value())
	}
	if _, err := c.TryObtain(ctx, key, time.Second, Reentrant("job-7")); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another owner entered: %v", err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the outer level on all 3 instances", func() bool { return f.holders(t, key, outer.Value()) == 3 })
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the key gone after the last release", func() bool { return f.present(t, key) == 0 })
}

func TestRedlockWakeUpOnRelease(t *testing.T) {
	f := newRedlockFixture(t, 3)
	// The back-off sleeps uniformly in [0, 10 min], cut to the holder's remaining TTL (10 s):
	// a poll would come after 5 s all but 1 time in 120, so taking the lock sooner takes
	// the wake-up.
	c := f.client(t, WithBackoff(10*time.Minute, 10*time.Minute))
	ctx := testCtx(t, 20*time.Second)
	holder := mustObtain(t, c, ctx, "lock:rl:wake", 10*time.Second)
	got := make(chan error, 1)
	go func() {
		// A long ttl, hence a long per-instance timeout (505ms): on a loaded machine the
		// woken attempt must not fail for slowness and fall back to the 10s back-off.
		l, err := c.Obtain(ctx, "lock:rl:wake", 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	// The waiter tried once and sleeps; wait until its Client subscribed on every instance
	// (started by its first wait, in the background), so the release cannot go unheard.
	for _, rdb := range f.clients {
		redistest.Eventually(t, "the wake-up subscription", func() bool {
			n, err := rdb.PubSubNumSub(ctx, protocol.RedlockReleasedChannel).Result()
			return err == nil && n[protocol.RedlockReleasedChannel] > 0
		})
	}
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// The bound only has to tell a wake-up from a poll (see above), on a loaded machine
	// under -race.
	if took := time.Since(released); took > 5*time.Second {
		t.Fatalf("the waiter took %v after the release", took)
	}
}

func TestRedlockEvents(t *testing.T) {
	f := newRedlockFixture(t, 3)
	c := f.client(t)
	ctx := testCtx(t, 10*time.Second)
	sub := f.clients[1].Subscribe(ctx, protocol.EventsChannel) // any one instance sees every event
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	l := mustObtain(t, c, ctx, "lock:rl:events", time.Second, WithTrace("t-ev"))
	if err := l.Refresh(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		w, err := c.Obtain(ctx, l.Key(), time.Second, WithTrace("t-wait"))
		if err == nil {
			err = w.Release(ctx)
		}
		waiter <- err
	}()
	time.Sleep(200 * time.Millisecond) // the waiter found it taken
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Fatal(err)
	}
	// Each lock's events arrive in the order they happened (one queue per Client); the two
	// locks' events interleave as the hand-off raced.
	want := map[string][]EventType{
		"t-ev":   {EventAcquired, EventRenewed, EventReleased},
		"t-wait": {EventWaiting, EventAcquired, EventReleased},
	}
	for len(want["t-ev"])+len(want["t-wait"]) > 0 {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("still waiting for %v: %v", want, err)
		}
		var e protocol.Event
		if err := json.Unmarshal([]byte(msg.Payload), &e); err != nil {
			t.Fatalf("bad event %q: %v", msg.Payload, err)
		}
		next := want[e.Trace]
		if e.Trace == "t-ev" && e.Type == string(EventWaiting) && len(next) == 3 {
			continue // its first attempt was too slow on a loaded machine: it waited too
		}
		if len(next) == 0 || e.Type != string(next[0]) || e.Key != l.Key() || e.Node != "test" || e.AtMs == 0 ||
			e.Type == string(EventWaiting) && e.Waiters != 1 || e.Type == string(EventRenewed) && e.TTLMs != 1000 ||
			e.Trace == "t-ev" && e.Value != l.Value() {
			t.Fatalf("got %s, want next one of %v", msg.Payload, want)
		}
		want[e.Trace] = next[1:]
	}
}

func TestNewRedlockInvalid(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialed
	defer rdb.Close()
	for name, tc := range map[string]struct {
		clients []redis.UniversalClient
		opts    []RedlockOption
	}{
		"no clients":     {nil, nil},
		"nil client":     {[]redis.UniversalClient{rdb, nil}, nil},
		"drift factor 1": {[]redis.UniversalClient{rdb}, []RedlockOption{WithDrift(1, 0)}},
		"negative drift": {[]redis.UniversalClient{rdb}, []RedlockOption{WithDrift(0.01, -time.Millisecond)}},
	} {
		if c, err := NewRedlock(tc.clients, tc.opts...); !errors.Is(err, ErrInvalid) || c != nil {
			t.Errorf("%s: NewRedlock = %v, %v; want ErrInvalid", name, c, err)
		}
	}
	c, err := NewRedlock([]redis.UniversalClient{rdb}, WithDrift(0.5, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// ttl*0.5 of drift leaves validity; a ttl below 1ms is refused before any round trip.
	if _, err := c.TryObtain(context.Background(), "lock:x", 500*time.Microsecond); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ttl below 1ms: %v", err)
	}
}

// The demo runs Redlock on N embedded miniredis servers: the scripts must work there too.
// A compatibility test of that mode, not a stand-in for Redis.
func TestRedlockMiniredisCompatibility(t *testing.T) {
	var clients []redis.UniversalClient
	for range 3 {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		clients = append(clients, rdb)
	}
	// miniredis compiles each script on its first run (slow under -race): this test is about
	// the scripts, not timing.
	c, err := NewRedlock(clients, WithNode("demo"), WithInstanceTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:demo:a", time.Second, Reentrant("worker-1"))
	again := mustObtain(t, c, ctx, "lock:demo:a", time.Second, Reentrant("worker-1"))
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := l.TTL(ctx); err != nil || d <= time.Second {
		t.Fatalf("TTL after Refresh = %v, %v", d, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryObtain(ctx, "lock:demo:a", time.Second); err != nil {
		t.Fatalf("free again after the last release: %v", err)
	}
}

// The instances delete a released lock in parallel, so the attempt woken by a release's first
// copy can find the lock still held on some of them and fail. The quorum-th copy must wake
// that waiter again (the flake this reproduces slept out the holder's 10 s TTL); further
// copies, and copies of a release that woke another waiter, must not.
func TestRedlockWakeupsQuorumCopyWakesAgain(t *testing.T) {
	w := newRedlockWakeups(nil, 2)
	w.started = true // no subscriptions: released is called directly
	first, leaveFirst := w.subscribe("k")
	second, leaveSecond := w.subscribe("k")
	defer leaveSecond()
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	w.released("k", "v1")
	if !woken(first) || woken(second) {
		t.Fatal("the first copy must wake the longest waiter only")
	}
	w.released("k", "v1")
	if !woken(first) {
		t.Fatal("the quorum-th copy did not wake the waiter whose attempt failed")
	}
	w.released("k", "v1")
	if woken(first) || woken(second) {
		t.Fatal("a copy past the quorum woke a waiter")
	}
	// The first waiter got the lock and left: the next release wakes the second one, on its
	// first copy and again on its quorum-th.
	leaveFirst()
	w.released("k", "v2")
	if !woken(second) {
		t.Fatal("the next release did not wake the remaining waiter")
	}
	w.released("k", "v2")
	if !woken(second) {
		t.Fatal("the quorum-th copy of v2 did not wake its waiter")
	}
}
