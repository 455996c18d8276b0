package bench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// BenchmarkUncontended measures one goroutine's uncontended obtain+release cycle for
// locklib (default options: fencing tokens, FIFO waiting and events on), go-redsync/redsync
// v4 and bsm/redislock, on the same redis-server in the same run. The libraries take turns in
// rounds of b.N/rounds cycles each (b.N cycles per library in all), so load drift hits them alike. Reported per library:
// cycles/s, p50 and p99 in µs, the server's main-thread CPU per cycle (INFO cpu) and the
// server's µs per call of each command it ran (INFO commandstats, reset before each of the
// library's rounds; the commands a script calls are counted on their own and inside the
// script's figure); and locklib's ratios to each peer (above 1 is better for cycles/s,
// below 1 for p50 and p99):
//
//	cd bench && go test -run '^$' -bench Uncontended -benchtime 20000x
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	newRDB := func() *redis.Client {
		rdb := srv.Client()
		b.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	ll := locklib.New(newRDB())
	defer ll.Close()
	rs := redsync.New(goredis.NewPool(newRDB()))
	bsm := redislock.New(newRDB())
	const ttl = 10 * time.Second
	libs := []*uncontended{
		{name: "locklib", cycle: func() error {
			l, err := ll.Obtain(ctx, "lock:bench:locklib", ttl)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{name: "redsync", cycle: func() error {
			m := rs.NewMutex("lock:bench:redsync", redsync.WithExpiry(ttl), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			_, err := m.UnlockContext(ctx)
			return err
		}},
		{name: "bsm", cycle: func() error {
			l, err := bsm.Obtain(ctx, "lock:bench:bsm", ttl, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
	}
	admin := newRDB()
	for _, lib := range libs { // warm up connections and script caches
		for range 100 {
			if err := lib.cycle(); err != nil {
				b.Fatalf("%s: %v", lib.name, err)
			}
		}
	}
	const rounds = 10
	for _, lib := range libs {
		lib.reset(b.N)
	}
	b.ResetTimer()
	for r := range rounds {
		for i := range libs {
			lib := libs[(i+r)%len(libs)] // rotate who goes first
			lib.round(b, ctx, admin, (b.N+rounds-1)/rounds)
		}
	}
	for _, lib := range libs {
		lib.report(b)
	}
	for _, peer := range libs[1:] {
		b.ReportMetric(libs[0].perSecond()/peer.perSecond(), "locklib/"+peer.name+":cycles/s")
		b.ReportMetric(libs[0].pct(0.50)/peer.pct(0.50), "locklib/"+peer.name+":p50")
		b.ReportMetric(libs[0].pct(0.99)/peer.pct(0.99), "locklib/"+peer.name+":p99")
	}
	b.ReportMetric(0, "ns/op") // a run's wall time says nothing here
}

// uncontended is one library's cycle and what its rounds measured.
type uncontended struct {
	name    string
	cycle   func() error
	took    []time.Duration
	elapsed time.Duration
	cpu     time.Duration                    // the server's main-thread CPU during the rounds
	stats   map[string]redistest.CommandStat // by command, summed over the rounds
	order   []string                         // commands seen
}

func (u *uncontended) reset(n int) {
	u.took, u.elapsed, u.cpu, u.stats, u.order = make([]time.Duration, 0, n), 0, 0, map[string]redistest.CommandStat{}, nil
}

// round runs n cycles between a CONFIG RESETSTAT and an INFO, adding up what it measured.
func (u *uncontended) round(b *testing.B, ctx context.Context, admin *redis.Client, n int) {
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, ctx, admin)
	start := time.Now()
	for range n {
		t0 := time.Now()
		if err := u.cycle(); err != nil {
			b.Fatalf("%s: %v", u.name, err)
		}
		u.took = append(u.took, time.Since(t0))
	}
	u.elapsed += time.Since(start)
	u.cpu += serverCPU(b, ctx, admin) - cpu0
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for name, s := range redistest.CommandStats(info) {
		if name == "config" || name == "info" {
			continue
		}
		if _, seen := u.stats[name]; !seen {
			u.order = append(u.order, name)
		}
		t := u.stats[name]
		t.Calls += s.Calls
		t.Usec += s.Usec
		u.stats[name] = t
	}
}

func (u *uncontended) perSecond() float64 { return float64(len(u.took)) / u.elapsed.Seconds() }

// pct is the p-quantile of the cycle times in µs (took must be sorted).
func (u *uncontended) pct(p float64) float64 {
	return float64(u.took[int(p*float64(len(u.took)-1))].Nanoseconds()) / 1000
}

func (u *uncontended) report(b *testing.B) {
	slices.Sort(u.took)
	b.ReportMetric(u.perSecond(), u.name+":cycles/s")
	b.ReportMetric(u.pct(0.50), u.name+":p50-µs")
	b.ReportMetric(u.pct(0.99), u.name+":p99-µs")
	cycles := float64(len(u.took))
	b.ReportMetric(float64(u.cpu.Nanoseconds())/1000/cycles, u.name+":server-cpu-µs/cycle")
	slices.Sort(u.order)
	var line strings.Builder
	for _, name := range u.order {
		s := u.stats[name]
		line.WriteString(" " + name + "=" + strconv.FormatFloat(float64(s.Usec)/float64(s.Calls), 'f', 2, 64) +
			"µs×" + strconv.FormatFloat(float64(s.Calls)/cycles, 'f', 1, 64))
		switch name {
		case "evalsha", "eval", "fcall", "set":
			b.ReportMetric(float64(s.Usec)/float64(s.Calls), u.name+":"+name+"-µs/call")
		}
	}
	b.Logf("%s server µs per call × calls per cycle:%s", u.name, line.String())
}

// serverCPU is redis-server's main-thread CPU time so far (INFO cpu).
func serverCPU(b *testing.B, ctx context.Context, admin *redis.Client) time.Duration {
	info, err := admin.Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		name, v, ok := strings.Cut(line, ":")
		if ok && (name == "used_cpu_sys_main_thread" || name == "used_cpu_user_main_thread") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %q", line)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
