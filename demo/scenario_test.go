package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Scenario runs are short: every timing of the demo scales with the TTL.
const (
	testTTL      = 1500 * time.Millisecond
	testDuration = 5 * time.Second
)

// runDemo runs cfg for its Duration and returns the summary, logging it for a failing test.
func runDemo(t *testing.T, cfg Config) Summary {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = testTTL
	}
	if cfg.Duration == 0 {
		cfg.Duration = testDuration
	}
	cfg.Seed = 1
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(cfg.Duration + 30*time.Second):
		t.Error("Done() did not close after the run's duration")
	}
	for _, w := range c.Snapshot().Workers {
		if w.LastError != "" {
			t.Logf("%s: last error: %s", w.Name, w.LastError)
		}
	}
	s := c.Stop()
	t.Logf("%s: %+v", cfg.Scenario, s.Counters)
	if s.Sections == 0 {
		t.Errorf("no critical section in %v", cfg.Duration)
	}
	if cfg.Lock != Naive && (s.Unsafe() || s.NoTTLLocks != 0) {
		t.Errorf("%d overlaps, %d stale writes accepted, %d locks without a TTL: locklib failed", s.Overlaps, s.StaleAccepted, s.NoTTLLocks)
	}
	return s
}

// redlockConfig is lighter than the defaults: miniredis runs each Lua call in a fresh
// interpreter under one server-wide lock, and under -race on a busy machine eight workers on
// three embedded servers can exceed Redlock's per-instance timeout on every attempt.
func redlockConfig(target Servers, sc Scenario) Config {
	return Config{Servers: target, Scenario: sc, Workers: 4, TTL: 2 * time.Second, Duration: 6 * time.Second}
}

func embedded(t *testing.T, n int) *Embedded {
	t.Helper()
	e, err := StartEmbedded(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// With no fault, nobody ever writes late: a stale write here would mean two holders at once.
func TestHealthy(t *testing.T) {
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Healthy})
	if s.StaleRejected != 0 || s.LostSections != 0 {
		t.Errorf("healthy run: %d stale writes, %d lost sections, want 0", s.StaleRejected, s.LostSections)
	}
	if s.Handoffs == 0 {
		t.Error("no hand-off between workers")
	}
}

// Work longer than the TTL survives only through the watchdog's renewals.
func TestSlow(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Slow})
	if s.StaleRejected != 0 {
		t.Errorf("%d stale writes in the slow scenario, want 0", s.StaleRejected)
	}
}

// A crashed holder's lock expires and another worker takes the resource over.
func TestCrash(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Crash})
	if s.Crashes == 0 || s.ExpiredAfterCrash == 0 {
		t.Errorf("%d crashes, %d expired after crash, want both > 0", s.Crashes, s.ExpiredAfterCrash)
	}
	if s.StaleRejected != 0 {
		t.Errorf("%d stale writes, want 0 (a crashed worker never writes)", s.StaleRejected)
	}
}

// A frozen holder wakes after its lock went to another worker: its write is refused.
func TestPause(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Pause})
	if s.Pauses == 0 || s.StaleRejected == 0 {
		t.Errorf("%d pauses, %d stale writes rejected, want both > 0", s.Pauses, s.StaleRejected)
	}
}

// The same on Redlock, where the resource compares owner values instead of tokens.
func TestPauseRedlock(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	s := runDemo(t, redlockConfig(embedded(t, 3).Servers(true), Pause))
	if s.Protection != OwnerCompare.String() {
		t.Errorf("protection %s on Redlock", s.Protection)
	}
	if s.Pauses == 0 || s.StaleRejected == 0 {
		t.Errorf("%d pauses, %d stale writes rejected, want both > 0", s.Pauses, s.StaleRejected)
	}
}

// Redlock over 3 embedded servers, one closed and restarted empty mid-run.
func TestFailoverEmbedded(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	s := runDemo(t, redlockConfig(embedded(t, 3).Servers(true), Failover))
	if s.Failovers == 0 {
		t.Error("no failover happened")
	}
}

// redistestFaults stops and restarts real redis-server processes.
type redistestFaults []*redistest.Server

func (f redistestFaults) StopInstance(i int) error { f[i].Kill(); return nil }
func (f redistestFaults) RestartEmpty(i int) error { f[i].Restart(); return nil }

// redisServers is a Redlock target on test servers, without a way to stop them.
func redisServers(servers []*redistest.Server) Servers {
	target := Servers{Label: "3 redis-server (test)", Redlock: true}
	for _, s := range servers {
		target.Addrs = append(target.Addrs, s.Addr)
	}
	target.Dial = func(i int) redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: target.Addrs[i], DialTimeout: 250 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
	}
	return target
}

// Redlock over 3 real redis-server processes: the failover kills one and restarts it empty.
func TestFailoverRealRedis(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	servers := redistest.StartN(t, 3)
	target := redisServers(servers)
	target.Faults = redistestFaults(servers)
	s := runDemo(t, Config{Servers: target, Scenario: Failover})
	if s.Failovers == 0 {
		t.Error("no failover happened")
	}
	if !servers[0].Running() {
		t.Error("the killed server was not restarted")
	}
}

// Servers the demo cannot stop (--redis): the failover cuts the workers off one instance and,
// before letting them back, deletes the demo's own lock keys there, and nothing else.
func TestFailoverPartition(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	servers := redistest.StartN(t, 3)
	// Someone else's lock under a demo key on the first instance to fail over: not the demo's.
	const foreign = "billing-3:-:1764489600123:0123456789abcdef"
	admin := servers[0].Client()
	if err := admin.Set(context.Background(), ResourceKey(LockLib, 1), foreign, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := runDemo(t, Config{Servers: redisServers(servers), Scenario: Failover, Duration: 6 * time.Second})
	if s.Failovers == 0 {
		t.Error("no failover happened")
	}
	if v, err := admin.Get(context.Background(), ResourceKey(LockLib, 1)).Result(); err != nil || v != foreign {
		t.Errorf("the foreign lock on instance 0 is now %q (%v): the wipe touched a value it did not write", v, err)
	}
}

// The naive lock has no fence: a frozen holder's late write is accepted, an overlap, and its
// DEL then frees the next holder's lock. The checker must see it: proof that it can fail.
func TestNaivePause(t *testing.T) {
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Pause, Lock: Naive})
	if s.Pauses == 0 || s.Overlaps == 0 || s.StaleAccepted == 0 || s.StaleRejected != 0 {
		t.Errorf("naive pause: %d pauses, %d overlaps, %d stale accepted, %d rejected; want overlaps and stale writes accepted, none refused",
			s.Pauses, s.Overlaps, s.StaleAccepted, s.StaleRejected)
	}
	if s.Protection != Unprotected.String() || s.Lock != Naive {
		t.Errorf("lock %s protection %s", s.Lock, s.Protection)
	}
}

// A naive worker that crashes between SETNX and EXPIRE leaves its key with no TTL: the watch
// finds it in Redis, counts it and, as an operator would, deletes it.
func TestNaiveCrashLeavesNoTTLKey(t *testing.T) {
	t.Parallel()
	e := embedded(t, 1)
	c, err := Start(Config{Servers: e.Servers(false), Scenario: Crash, Lock: Naive, TTL: testTTL, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	deadline := time.Now().Add(20 * testTTL)
	for c.Snapshot().Counters.NoTTLLocks == 0 && time.Now().Before(deadline) {
		time.Sleep(testTTL / 10)
	}
	snap := c.Snapshot()
	if snap.Counters.NoTTLLocks == 0 {
		t.Fatalf("no lock without a TTL found after %v: %+v", 20*testTTL, snap.Counters)
	}
	found := false
	for _, ev := range snap.Events {
		found = found || strings.Contains(ev.Text, "between SETNX and EXPIRE")
	}
	if !found {
		t.Errorf("no crash between SETNX and EXPIRE in the events: %v", snap.Events)
	}
	// The key really has no TTL in Redis: counted after 1 TTL, deleted after 2, so right after
	// the count it is still there.
	cl := redis.NewClient(embeddedClientOptions(e.Addrs()[0]))
	defer cl.Close()
	stuck := 0
	for _, key := range c.Resources() {
		if v, _ := cl.Do(context.Background(), "PTTL", key).Int64(); v == -1 {
			stuck++
		}
	}
	if stuck != 1 {
		t.Errorf("%d lock keys without a TTL in Redis right after the watch counted one, want 1", stuck)
	}
}

// A naive mixed run (short TTL so that every phase gets its fault) finds overlaps; the same
// run with locklib (runDemo checks) none. Phases of 3.5 s (almost 6 TTLs): with 2.5 s, one run
// in about twenty found no overlap on a loaded machine (presumably the pause phase came while
// the workers still polled the key the crash left without a TTL).
func TestNaiveMixed(t *testing.T) {
	redistest.Slow(t)
	t.Parallel()
	for _, lock := range []Lock{Naive, LockLib} {
		t.Run(string(lock), func(t *testing.T) {
			t.Parallel()
			s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: Mixed, Lock: lock,
				TTL: 600 * time.Millisecond, Duration: 14 * time.Second})
			if lock == Naive && !s.Unsafe() {
				t.Errorf("naive mixed run safe: %+v", s.Counters)
			}
		})
	}
}
