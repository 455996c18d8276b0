package demo

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// rwPoolDuration is the rw-pool runs' length: DEMO_RW_POOL=2m for the soak (make soak).
func rwPoolDuration(t *testing.T) time.Duration {
	if v := os.Getenv("DEMO_RW_POOL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DEMO_RW_POOL=%q: %v", v, err)
		}
		return d
	}
	return 7 * time.Second
}

// checkRWPool asserts what every rw-pool run must show: faults that happened (crashes,
// pauses whose late operations were refused), readers sharing the document, the pool at most
// full, and nothing unsafe (runDemo checks that).
func checkRWPool(t *testing.T, s Summary) {
	t.Helper()
	t.Logf("rw-pool: %d sections, %d crashes, %d pauses, %d leases lost, %d overlapping holders, %d refused, %d accepted stale, "+
		"%d overlaps, %d lease violations, up to %d readers, up to %d of %d permits",
		s.Sections, s.Crashes, s.Pauses, s.LeasesLost, s.OverlappingHolders, s.StaleRejected, s.StaleAccepted,
		s.Overlaps, s.LeaseViolations, s.MaxReaders, s.MaxPermits, s.Permits)
	if s.Crashes == 0 || s.Pauses == 0 || s.LeasesLost == 0 {
		t.Errorf("%d crashes, %d pauses, %d leases lost: want each above 0", s.Crashes, s.Pauses, s.LeasesLost)
	}
	if s.StaleRejected == 0 || s.OverlappingHolders == 0 {
		t.Errorf("%d late operations refused of %d overlapping holders: a pause should have made one", s.StaleRejected, s.OverlappingHolders)
	}
	if s.MaxReaders < 2 {
		t.Errorf("at most %d readers at once: the document is read-mostly, readers should share it", s.MaxReaders)
	}
	if s.MaxPermits < 1 || s.MaxPermits > int64(s.Permits) {
		t.Errorf("up to %d permits in use at once, want 1..%d", s.MaxPermits, s.Permits)
	}
	if s.Resources != 2 || s.Permits != DefaultPermits {
		t.Errorf("resources %d permits %d", s.Resources, s.Permits)
	}
}

// The rw-pool scenario on the embedded miniredis (the default of `lockscope demo`).
func TestRWPool(t *testing.T) {
	t.Parallel()
	s := runDemo(t, Config{Servers: embedded(t, 1).Servers(false), Scenario: RWPool, TTL: time.Second, Duration: rwPoolDuration(t)})
	checkRWPool(t, s)
}

// The same on a real redis-server (`lockscope demo --scenario rw-pool --redis URL`), which the
// demo shares: after the run its cleanup leaves no key of the scenario on the document, and on
// the pool only another client's permit (taken before the run, valid for an hour) with the
// companions it needs.
func TestRWPoolRealRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client()
	ctx := context.Background()
	foreign := protocol.LeaseMember{Mode: protocol.ModePermit, Op: "0123456789abcdef:1",
		Value: protocol.NewValue("billing-3", "", time.Now())}.String()
	if err := admin.ZAdd(ctx, PoolKey, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: foreign}).Err(); err != nil {
		t.Fatal(err)
	}
	target := Servers{Label: "redis-server (test)", Addrs: []string{srv.Addr}}
	target.Dial = func(int) redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 250 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
	}
	cfg := Config{Servers: target, Scenario: RWPool, TTL: time.Second, Duration: rwPoolDuration(t), Seed: 1}
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	s := c.Stop()
	if s.Unsafe() {
		t.Errorf("unsafe: %v", s.Verdict())
	}
	checkRWPool(t, s)
	if err := c.RemoveKeys(); err != nil {
		t.Fatal(err)
	}
	companions := protocol.CompanionKeys(DocKey)
	for _, k := range append([]string{DocKey}, companions[:]...) {
		if n, err := admin.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("%s left after the cleanup (%d, %v)", k, n, err)
		}
	}
	if members, err := admin.ZRange(ctx, PoolKey, 0, -1).Result(); err != nil || len(members) != 1 || members[0] != foreign {
		t.Errorf("the pool holds %q after the cleanup (%v), want only the other client's permit", members, err)
	}
	if n, err := admin.Exists(ctx, protocol.LimitKey(PoolKey)).Result(); err != nil || n != 1 {
		t.Errorf("the pool's limit is gone (%d, %v) while another client holds a permit", n, err)
	}
}
