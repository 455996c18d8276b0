package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRedlockCycle measures one uncontended acquire+release cycle on 5 independent
// redis-server processes, for lockscope's Redlock and go-redsync/redsync v4, against the same
// servers in the same run. The libraries take turns cycle by cycle (rotating who goes first),
// so a noisy machine slows them alike. Reported per library: p50 and p99 in µs.
//
//	all-up:        5 healthy local instances
//	one-slow-2ms:  instance 0 behind a TCP proxy adding 1 ms each way (a far or busy node)
//
// docs/benchmarks/redlock.md has the command and the results.
func BenchmarkRedlockCycle(b *testing.B) {
	b.Run("all-up", func(b *testing.B) { benchRedlockCycle(b, 0) })
	b.Run("one-slow-2ms", func(b *testing.B) { benchRedlockCycle(b, time.Millisecond) })
}

// redlockContender is one library's cycle and the latencies it took.
type redlockContender struct {
	name  string
	cycle func(ctx context.Context) error
	took  []time.Duration
}

func benchRedlockCycle(b *testing.B, slowDelay time.Duration) {
	const ttl = 10 * time.Second // both libraries: per-instance timeout about ttl/20
	ctx := context.Background()
	var clients []redis.UniversalClient
	var pools []redsyncredis.Pool
	for i, srv := range redistest.StartN(b, 5) {
		addr := srv.Addr
		if i == 0 && slowDelay > 0 {
			p := redistest.NewProxy(b, srv.Addr)
			p.SetDelay(slowDelay)
			addr = p.Addr
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		b.Cleanup(func() { _ = rdb.Close() })
		clients = append(clients, rdb)
		pools = append(pools, goredis.NewPool(rdb))
	}
	quiet, err := locklib.NewRedlock(clients, locklib.WithEvents(false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = quiet.Close() })
	withEvents, err := locklib.NewRedlock(clients) // the default: lifecycle events published
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = withEvents.Close() })
	rs := redsync.New(pools...)

	lockscopeCycle := func(c *locklib.Client, key string) func(context.Context) error {
		return func(ctx context.Context) error {
			l, err := c.TryObtain(ctx, key, ttl)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
	redsyncCycle := func(m *redsync.Mutex) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			if ok, err := m.UnlockContext(ctx); !ok {
				return errors.Join(errors.New("redsync: unlock not confirmed by a quorum"), err)
			}
			return nil
		}
	}
	contenders := []*redlockContender{
		{name: "lockscope", cycle: lockscopeCycle(quiet, "bench:rl:lockscope")},
		{name: "lockscope-events", cycle: lockscopeCycle(withEvents, "bench:rl:lockscope-events")},
		{name: "redsync", cycle: redsyncCycle(rs.NewMutex("bench:rl:redsync",
			redsync.WithExpiry(ttl), redsync.WithTries(1)))},
		{name: "redsync-failfast", cycle: redsyncCycle(rs.NewMutex("bench:rl:redsync-failfast",
			redsync.WithExpiry(ttl), redsync.WithTries(1), redsync.WithFailFast(true)))},
	}
	for _, c := range contenders { // warm up connections and scripts
		for range 20 {
			if err := c.cycle(ctx); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range contenders {
			c := contenders[(i+j)%len(contenders)]
			start := time.Now()
			if err := c.cycle(ctx); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			c.took = append(c.took, time.Since(start))
		}
	}
	b.StopTimer()
	for _, c := range contenders {
		p50, p99 := redlockPercentile(c.took, 50), redlockPercentile(c.took, 99)
		b.ReportMetric(float64(p50.Nanoseconds())/1e3, c.name+"-p50-µs")
		b.ReportMetric(float64(p99.Nanoseconds())/1e3, c.name+"-p99-µs")
	}
	base := contenders[2].took
	for _, c := range contenders {
		b.Logf("%-17s p50 %7s  p99 %7s   (p50 %.2fx, p99 %.2fx of redsync's)", c.name,
			redlockFmt(redlockPercentile(c.took, 50)), redlockFmt(redlockPercentile(c.took, 99)),
			redlockRatio(redlockPercentile(c.took, 50), redlockPercentile(base, 50)), redlockRatio(redlockPercentile(c.took, 99), redlockPercentile(base, 99)))
	}
}

func redlockPercentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func redlockRatio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func redlockFmt(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d.Nanoseconds())/1e3) }
