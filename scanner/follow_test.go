package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// waitFor reads updates until one satisfies ok, failing the test after within.
func waitFor(t *testing.T, updates <-chan Update, within time.Duration, what string, ok func(Update) bool) Update {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case u, open := <-updates:
			if !open {
				t.Fatalf("watch closed while waiting for %s", what)
			}
			if ok(u) {
				return u
			}
		case <-deadline:
			t.Fatalf("no %s within %v", what, within)
		}
	}
}

// lockIn finds key in a batch update.
func lockIn(u Update, key string) (Lock, bool) {
	if u.Kind != UpdateBatch {
		return Lock{}, false
	}
	for _, l := range u.Locks {
		if l.Key == key {
			return l, true
		}
	}
	return Lock{}, false
}

// applyFor hands apply every update that arrives within d: the stream once it has gone quiet.
func applyFor(updates <-chan Update, d time.Duration, apply func(Update)) {
	quiet := time.After(d)
	for {
		select {
		case u := <-updates:
			apply(u)
		case <-quiet:
			return
		}
	}
}

func passDone(gen uint64) func(Update) bool {
	return func(u Update) bool { return u.Kind == UpdatePassDone && u.Gen == gen }
}

// TestFollowTrackingSeesChanges: on a server without keyspace notifications, CLIENT TRACKING
// (no configuration changed) makes Watch re-read a new key, a deleted one, one that expires
// and one whose TTL a PEXPIRE changed, long before the next pass (an hour away).
func TestFollowTrackingSeesChanges(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "t", 50)
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
	if got := f.Following.Summary(); got != "tracking" {
		t.Fatalf("following %q, want tracking (%+v)", got, f.Following)
	}
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	if cfg := c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; cfg != "" {
		t.Fatalf("notify-keyspace-events changed to %q", cfg)
	}

	must(t, c.Set(ctx, "lock:t:new", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	waitFor(t, updates, 5*time.Second, "the new key", func(u Update) bool { l, ok := lockIn(u, "lock:t:new"); return ok && !l.Gone })

	must(t, c.Del(ctx, "lock:t:0000001").Err())
	waitFor(t, updates, 5*time.Second, "the deleted key gone", func(u Update) bool { l, ok := lockIn(u, "lock:t:0000001"); return ok && l.Gone })

	must(t, c.PExpire(ctx, "lock:t:0000002", time.Hour).Err())
	waitFor(t, updates, 5*time.Second, "the PEXPIRE", func(u Update) bool {
		l, ok := lockIn(u, "lock:t:0000002")
		return ok && l.TTL > 30*time.Minute
	})

	must(t, c.PExpire(ctx, "lock:t:0000003", 200*time.Millisecond).Err())
	waitFor(t, updates, 5*time.Second, "the expired key gone", func(u Update) bool { l, ok := lockIn(u, "lock:t:0000003"); return ok && l.Gone })

	// A key outside the pattern is not re-read.
	must(t, c.Set(ctx, "other:x", "v", 0).Err())
	must(t, c.Set(ctx, "lock:t:marker", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	waitFor(t, updates, 5*time.Second, "the marker", func(u Update) bool {
		if _, ok := lockIn(u, "other:x"); ok {
			t.Fatal("a key outside the pattern was re-read")
		}
		_, ok := lockIn(u, "lock:t:marker")
		return ok
	})
}

// limitedUser creates a user that may run everything but CLIENT TRACKING and returns a
// target that connects as it.
func limitedUser(t *testing.T, c *redis.Client, addr string) (*redis.Client, connect.Target) {
	t.Helper()
	must(t, c.Do(testCtx(t), "ACL", "SETUSER", "watcher", "on", ">pw", "~*", "&*", "+@all", "-client|tracking").Err())
	lc := redis.NewClient(&redis.Options{Addr: addr, Username: "watcher", Password: "pw"})
	t.Cleanup(func() { lc.Close() })
	return lc, standalone(lc, addr)
}

// TestFollowFallsBackWhenTrackingRefused: a user the ACL forbids CLIENT TRACKING gets a
// warning and follows locklib's events; the keys on screen are still re-read every second,
// and a key whose TTL ran out is re-read and found gone.
func TestFollowFallsBackWhenTrackingRefused(t *testing.T) {
	srv, c, _ := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "f", 20)
	_, target := limitedUser(t, c, srv.Addr)
	fl := New(target, Options{Interval: time.Hour}).Follow(ctx)
	updates := fl.Updates()
	warning := waitFor(t, updates, 10*time.Second, "the refusal warning", func(u Update) bool { return u.Kind == UpdateWarning })
	if !strings.Contains(warning.Warning, "CLIENT TRACKING refused") {
		t.Fatalf("warning %q", warning.Warning)
	}
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
	if !f.Following.Degraded() || f.Following.Summary() != "events" {
		t.Fatalf("following %+v, want events only", f.Following)
	}
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))

	// A locklib event names a key: it is re-read.
	must(t, c.Set(ctx, "lock:f:evented", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	ev, _ := json.Marshal(protocol.Event{Type: string(locklib.EventAcquired), Key: "lock:f:evented"})
	must(t, c.Publish(ctx, protocol.EventsChannel, ev).Err())
	waitFor(t, updates, 5*time.Second, "the evented key", func(u Update) bool { _, ok := lockIn(u, "lock:f:evented"); return ok })

	// A focused key changes silently: the once-a-second re-read shows it.
	fl.Focus([]string{"lock:f:0000004"})
	must(t, c.Set(ctx, "lock:f:0000004", "api-9:-:1764400000123:0123456789abcdef", time.Minute).Err())
	waitFor(t, updates, 5*time.Second, "the focused key's new holder", func(u Update) bool {
		l, ok := lockIn(u, "lock:f:0000004")
		return ok && l.Node == "api-9"
	})

	// A key's TTL runs out with nobody telling: it is re-read after its TTL and found gone.
	must(t, c.Set(ctx, "lock:f:short", "api-1:-:1764400000123:0123456789abcdef", 300*time.Millisecond).Err())
	must(t, c.Publish(ctx, protocol.EventsChannel, mustJSON(t, protocol.Event{Type: string(locklib.EventAcquired), Key: "lock:f:short"})).Err())
	waitFor(t, updates, 5*time.Second, "the short key", func(u Update) bool { l, ok := lockIn(u, "lock:f:short"); return ok && !l.Gone })
	waitFor(t, updates, 5*time.Second, "the short key gone", func(u Update) bool { l, ok := lockIn(u, "lock:f:short"); return ok && l.Gone })
}

// TestFollowNotificationsRefusedByACL: where the server sends keyspace notifications but the
// user's channel rules leave them out, the refusal comes as the subscription's answer: the
// follower warns and follows by tracking instead of reporting notifications it never gets.
func TestFollowNotificationsRefusedByACL(t *testing.T) {
	srv, c, _ := startStandalone(t)
	ctx := testCtx(t)
	must(t, c.ConfigSet(ctx, "notify-keyspace-events", "KA").Err())
	loadLocks(t, c, "n", 5)
	must(t, c.Do(ctx, "ACL", "SETUSER", "nokeyspace", "on", ">pw", "~*", "resetchannels",
		"&"+invalidateChannel, "&"+protocol.EventsChannel, "+@all").Err())
	lc := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "nokeyspace", Password: "pw"})
	t.Cleanup(func() { lc.Close() })
	updates := New(standalone(lc, srv.Addr), Options{Interval: time.Hour}).Follow(ctx).Updates()
	warning := waitFor(t, updates, 10*time.Second, "the refusal warning", func(u Update) bool { return u.Kind == UpdateWarning })
	if !strings.Contains(warning.Warning, "keyspace notifications unavailable") {
		t.Fatalf("warning %q", warning.Warning)
	}
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
	if f.Following.Summary() != "tracking" {
		t.Fatalf("following %q, want tracking", f.Following.Summary())
	}
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	must(t, c.Set(ctx, "lock:n:changed", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	waitFor(t, updates, 5*time.Second, "the new key, heard by tracking", func(u Update) bool { _, ok := lockIn(u, "lock:n:changed"); return ok })
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// TestFollowReconnectRescans: after the server is killed and restarted (empty), the
// subscriber reconnects and a pass starts at once, though the next was an hour away: it
// finds the keys gone.
func TestFollowReconnectRescans(t *testing.T) {
	srv, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "r", 30)
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	done := waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	if done.Census.Scanned != 30 {
		t.Fatalf("pass 1 scanned %d keys", done.Census.Scanned)
	}
	srv.Kill()
	srv.Restart()
	again := waitFor(t, updates, 20*time.Second, "a pass after the reconnect", func(u Update) bool { return u.Kind == UpdatePassDone })
	if again.Gen < 2 || again.Census.Scanned != 0 {
		t.Fatalf("pass %d after the restart scanned %d keys, want a new pass finding none", again.Gen, again.Census.Scanned)
	}
}

// TestPacedPassKeepsBudget: a pass paced at 10 % keeps its steps to about a tenth of its
// wall time, and the server's own CPU time (INFO cpu) under the budget.
func TestPacedPassKeepsBudget(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "p", 20_000)
	s := New(target, Options{})
	const budget = 0.1
	ps := newPacers(budget, connect.Standalone)
	var mu sync.Mutex
	var busy time.Duration // the steps' total time
	timed := func(ctx context.Context, addr string, step func() error) error {
		return ps.pace(ctx, addr, func() error {
			start := time.Now()
			err := step()
			mu.Lock()
			busy += time.Since(start)
			mu.Unlock()
			return err
		})
	}
	p := s.newPass(sink{batch: func(int, []Lock) error { return nil }, pace: timed})
	cpu0 := processCPU(t, c)
	start := time.Now()
	census, err := p.run(ctx)
	must(t, err)
	wall := time.Since(start)
	cpu := processCPU(t, c) - cpu0
	if census.Scanned != 20_000 {
		t.Fatalf("paced pass scanned %d keys", census.Scanned)
	}
	if busy <= 0 || float64(busy) > 1.5*budget*float64(wall) {
		t.Errorf("steps took %v of %v: more than the %.0f%% budget", busy, wall, budget*100)
	}
	if float64(cpu) > budget*float64(wall) {
		t.Errorf("server CPU %v over %v: more than the %.0f%% budget", cpu, wall, budget*100)
	}
	t.Logf("paced pass: %v wall, steps %v, server CPU %v", wall, busy, cpu)
}

// processCPU is redis-server's CPU time, all threads (INFO cpu).
func processCPU(t testing.TB, c *redis.Client) time.Duration {
	t.Helper()
	d, err := serverCPUTime(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// serverCPUTime is redis-server's CPU time, user and system, all threads (INFO cpu).
func serverCPUTime(ctx context.Context, c *redis.Client) (time.Duration, error) {
	return infoCPU(ctx, c, "used_cpu_sys:", "used_cpu_user:")
}

// infoCPU sums the INFO cpu fields named (with their colon), in seconds, as a duration.
func infoCPU(ctx context.Context, c *redis.Client, fields ...string) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var seconds float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, field := range fields {
			if v, ok := strings.CutPrefix(line, field); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO cpu %s: %w", line, err)
				}
				seconds += f
			}
		}
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// TestFollowClusterAndRedlock: every cluster master and every Redlock instance is followed by
// tracking; a key created on any master, or on the Redlock instances, is re-read long before
// the next pass, and a deletion on every instance shows the key gone.
func TestFollowClusterAndRedlock(t *testing.T) {
	redistest.Slow(t)
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, 3)
		cc := cl.Client()
		ctx := testCtx(t)
		loadLocks(t, cc, "fc", 30)
		updates := New(clusterTarget(cl, cc), Options{Interval: time.Hour}).Watch(ctx)
		f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
		if len(f.Following.Servers) != 3 || f.Following.Summary() != "tracking" {
			t.Fatalf("following %+v, want 3 masters by tracking", f.Following)
		}
		waitFor(t, updates, 20*time.Second, "pass 1", passDone(1))
		masters := map[string]bool{}
		for i := range 12 {
			key := fmt.Sprintf("lock:fc:new%d", i)
			must(t, cc.Set(ctx, key, "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
			u := waitFor(t, updates, 5*time.Second, key, func(u Update) bool { _, ok := lockIn(u, key); return ok })
			l, _ := lockIn(u, key)
			masters[l.Addr] = true
		}
		if len(masters) != 3 {
			t.Errorf("new keys seen on %d masters, want 3", len(masters))
		}
	})
	t.Run("redlock", func(t *testing.T) {
		servers := redistest.StartN(t, 3)
		target, clients := redlockTarget(servers)
		ctx := testCtx(t)
		updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
		f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
		if len(f.Following.Servers) != 3 || f.Following.Summary() != "tracking" {
			t.Fatalf("following %+v, want 3 instances by tracking", f.Following)
		}
		waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
		for _, c := range clients {
			must(t, c.Set(ctx, "lock:fr:x", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
		}
		waitFor(t, updates, 5*time.Second, "the key on a quorum", func(u Update) bool {
			l, ok := lockIn(u, "lock:fr:x")
			return ok && l.Quorum != nil && l.Quorum.Agree == 3
		})
		for _, c := range clients {
			must(t, c.Del(ctx, "lock:fr:x").Err())
		}
		waitFor(t, updates, 5*time.Second, "the key gone", func(u Update) bool { l, ok := lockIn(u, "lock:fr:x"); return ok && l.Gone })
	})
}

// flushAndWaitEmpty runs FLUSHALL and waits for a later pass that finds nothing.
func flushAndWaitEmpty(t *testing.T, ctx context.Context, c *redis.Client, updates <-chan Update) {
	t.Helper()
	must(t, c.FlushAll(ctx).Err())
	waitFor(t, updates, 5*time.Second, "a pass after FLUSHALL finding nothing", func(u Update) bool {
		return u.Kind == UpdatePassDone && u.Gen > 1 && u.Census.Scanned == 0
	})
}

// TestFollowTrackingSeesFlush: FLUSHALL sends CLIENT TRACKING's invalidation of every key (a
// null payload): the census is taken again at once, so the locks it removed leave the
// console long before the next pass (an hour away).
func TestFollowTrackingSeesFlush(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "x", 20)
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	flushAndWaitEmpty(t, ctx, c, updates)
}

// TestFollowNotificationsSeesFlush: keyspace notifications name no key on FLUSHALL; the
// census must still lose the flushed locks long before the next pass (an hour away).
func TestFollowNotificationsSeesFlush(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "n", 20)
	updates := New(target, Options{Interval: time.Hour, ConfigureNotifications: true}).Watch(ctx)
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
	if got := f.Following.Summary(); got != "notifications" {
		t.Fatalf("following %q, want notifications", got)
	}
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	flushAndWaitEmpty(t, ctx, c, updates)
}

// TestFollowTrackingSurvivesClientKill: CLIENT KILL of the subscriber alone (the data
// connections stay) is followed by a new subscriber with tracking on again: a key created
// afterwards is heard of long before the next pass (an hour away).
func TestFollowTrackingSurvivesClientKill(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "k", 10)
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	if n := c.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Val(); n != int64(1) {
		t.Fatalf("killed %v subscribers, want 1", n)
	}
	time.Sleep(500 * time.Millisecond) // the subscriber reconnects
	must(t, c.Set(ctx, "lock:k:after", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	waitFor(t, updates, 5*time.Second, "the key created after the kill", func(u Update) bool { _, ok := lockIn(u, "lock:k:after"); return ok })
}

// TestFollowHearsEvictions: a server whose keyspace notifications leave out evictions
// (notify-keyspace-events Kg$hx) evicting locks under maxmemory: the evicted locks leave the
// census long before the next pass (an hour away).
func TestFollowHearsEvictions(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	must(t, c.ConfigSet(ctx, "notify-keyspace-events", "Kg$hx").Err())
	keys := loadLocks(t, c, "e", 300)
	census := map[string]bool{}
	apply := func(u Update) {
		for _, l := range u.Locks {
			if l.Gone {
				delete(census, l.Key)
			} else {
				census[l.Key] = true
			}
		}
	}
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	for u := range updates {
		apply(u)
		if u.Kind == UpdatePassDone {
			break
		}
	}
	used := c.MemoryUsage(ctx, keys[0]).Val() // a lock's size, for scale
	info := c.Info(ctx, "memory").Val()
	_, rest, _ := strings.Cut(info, "used_memory:")
	mem, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]), 10, 64)
	must(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err())
	must(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(mem+100*used, 10)).Err())
	filler := strings.Repeat("x", 1000)
	for i := range 300 {
		must(t, c.Set(ctx, fmt.Sprintf("filler:%d", i), filler, 0).Err())
	}
	evicted := 0
	for _, k := range keys {
		if c.Exists(ctx, k).Val() == 0 {
			evicted++
		}
	}
	if evicted == 0 {
		t.Fatal("no lock was evicted")
	}
	applyFor(updates, 2*time.Second, apply)
	for k := range census {
		if c.Exists(ctx, k).Val() == 0 {
			t.Fatalf("%s was evicted (%d of %d locks were) and is still in the census", k, evicted, len(keys))
		}
	}
}

// TestFollowEventsOnly: with EventsOnly (the demo's embedded miniredis, which has neither
// notifications nor tracking) the scanner asks for neither, even of a server that would grant
// tracking, warns of nothing, and still re-reads the keys locklib's events name.
func TestFollowEventsOnly(t *testing.T) {
	srv, c, _ := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "e", 5)
	fl := New(standalone(c, srv.Addr), Options{Interval: time.Hour, EventsOnly: true}).Follow(ctx)
	updates := fl.Updates()
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool {
		if u.Kind == UpdateWarning {
			t.Fatalf("warning %q", u.Warning)
		}
		return u.Kind == UpdateFollowing
	})
	if f.Following.Summary() != "events" {
		t.Fatalf("following %q, want events only", f.Following.Summary())
	}
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))
	must(t, c.Set(ctx, "lock:e:evented", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	ev, _ := json.Marshal(protocol.Event{Type: string(locklib.EventAcquired), Key: "lock:e:evented"})
	must(t, c.Publish(ctx, protocol.EventsChannel, ev).Err())
	waitFor(t, updates, 5*time.Second, "the evented key", func(u Update) bool {
		if u.Kind == UpdateWarning {
			t.Fatalf("warning %q", u.Warning)
		}
		_, ok := lockIn(u, "lock:e:evented")
		return ok
	})
}
