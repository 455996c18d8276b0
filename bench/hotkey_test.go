package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// locker is one library's "wait until held, then give back" on one key.
type locker interface {
	lock(ctx context.Context) (unlock func() error, err error)
}

const hotKey = "lock:bench:hot"

// lockTTL is far above any wait, so no lock expires during a run.
const lockTTL = 8 * time.Second

type locklibLocker struct{ c *locklib.Client }

func (l locklibLocker) lock(ctx context.Context) (func() error, error) {
	lk, err := l.c.Obtain(ctx, hotKey, lockTTL)
	if err != nil {
		return nil, err
	}
	return func() error { return lk.Release(ctx) }, nil
}

// redsync with its defaults (32 tries, 50-250 ms uniform retry delay); an exhausted
// Lock is tried again, so the worker waits until held like the others.
type redsyncLocker struct{ rs *redsync.Redsync }

func (r redsyncLocker) lock(ctx context.Context) (func() error, error) {
	for {
		m := r.rs.NewMutex(hotKey, redsync.WithExpiry(lockTTL))
		err := m.LockContext(ctx)
		if err == nil {
			return func() error { _, err := m.UnlockContext(ctx); return err }, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		var taken *redsync.ErrTaken
		if !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
			return nil, err
		}
	}
}

// bsm/redislock with ExponentialBackoff(4ms..256ms), the range of locklib's default back-off.
type bsmLocker struct{ c *redislock.Client }

func (b bsmLocker) lock(ctx context.Context) (func() error, error) {
	opts := &redislock.Options{RetryStrategy: redislock.ExponentialBackoff(4*time.Millisecond, 256*time.Millisecond)}
	for {
		l, err := b.c.Obtain(ctx, hotKey, lockTTL, opts)
		if err == nil {
			return func() error { return l.Release(ctx) }, nil
		}
		if ctx.Err() != nil || !errors.Is(err, redislock.ErrNotObtained) {
			return nil, err
		}
	}
}

// runDuration is how long each library runs each workload (LOCKSCOPE_BENCH_DURATION).
func runDuration(b *testing.B) time.Duration {
	if s := os.Getenv("LOCKSCOPE_BENCH_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("LOCKSCOPE_BENCH_DURATION: %v", err)
		}
		return d
	}
	return 5 * time.Second
}

// BenchmarkHotKey runs workers that each loop obtain -> critical section -> release on one
// key, for locklib, go-redsync/redsync v4 and bsm/redislock in the same run on the same
// redis-server, and reports sections/s, wait percentiles and fairness per library. The
// machine is shared, so the libraries take turns in rounds (each runs duration/rounds per
// round) and every library sees the same load drift:
//
//	cd bench && go test -run '^$' -bench HotKey -benchtime 1x
func BenchmarkHotKey(b *testing.B) {
	addr := redistest.Start(b).Addr
	newRDB := func() *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
		b.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	ll := locklib.New(newRDB())
	defer ll.Close()
	llQuiet := locklib.New(newRDB(), locklib.WithEvents(false))
	defer llQuiet.Close()
	libs := []struct {
		name string
		lk   locker
	}{
		{"locklib", locklibLocker{ll}},
		{"locklib-noevents", locklibLocker{llQuiet}},
		{"redsync", redsyncLocker{redsync.New(goredis.NewPool(newRDB()))}},
		{"bsm", bsmLocker{redislock.New(newRDB())}},
	}
	const rounds = 5
	for _, w := range []struct {
		workers int
		section time.Duration
	}{{16, time.Millisecond}, {4, 5 * time.Millisecond}} {
		b.Run(fmt.Sprintf("workers=%d/section=%v", w.workers, w.section), func(b *testing.B) {
			results := make([]result, len(libs))
			for b.Loop() {
				for i := range results {
					results[i] = result{perWorker: make([]int, w.workers)}
				}
				for range rounds {
					for i, lib := range libs {
						results[i].add(runHotKey(b, lib.lk, w.workers, w.section, runDuration(b)/rounds))
					}
				}
			}
			for i, lib := range libs {
				results[i].report(b, lib.name)
			}
			b.ReportMetric(0, "ns/op") // a run's wall time says nothing here
		})
	}
}

type result struct {
	elapsed    time.Duration
	waits      []time.Duration
	perWorker  []int
	overlapped int
}

func (r *result) add(o result) {
	r.elapsed += o.elapsed
	r.waits = append(r.waits, o.waits...)
	for i, n := range o.perWorker {
		r.perWorker[i] += n
	}
	r.overlapped += o.overlapped
}

func runHotKey(b *testing.B, lk locker, workers int, section, duration time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), duration+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(duration)
	var (
		mu     sync.Mutex
		r      = result{perWorker: make([]int, workers)}
		inside sync.Mutex // TryLock fails only if two sections overlap
		wg     sync.WaitGroup
	)
	start := time.Now()
	for i := range workers {
		wg.Go(func() {
			var waits []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				unlock, err := lk.lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				waits = append(waits, time.Since(t0))
				if !inside.TryLock() {
					mu.Lock()
					r.overlapped++
					mu.Unlock()
				} else {
					time.Sleep(section)
					inside.Unlock()
				}
				if err := unlock(); err != nil {
					b.Error(err)
					return
				}
				r.perWorker[i]++
			}
			mu.Lock()
			r.waits = append(r.waits, waits...)
			mu.Unlock()
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

func (r result) report(b *testing.B, lib string) {
	if len(r.waits) == 0 {
		b.Fatalf("%s: no sections ran", lib)
	}
	slices.Sort(r.waits)
	pct := func(p float64) float64 {
		return float64(r.waits[int(p*float64(len(r.waits)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(r.waits))/r.elapsed.Seconds(), lib+":sections/s")
	b.ReportMetric(pct(0.50), lib+":wait-p50-ms")
	b.ReportMetric(pct(0.99), lib+":wait-p99-ms")
	b.ReportMetric(pct(1), lib+":wait-max-ms")
	b.ReportMetric(float64(slices.Min(r.perWorker))/float64(max(slices.Max(r.perWorker), 1)), lib+":min/max-per-worker")
	b.ReportMetric(float64(r.overlapped), lib+":overlaps")
}
