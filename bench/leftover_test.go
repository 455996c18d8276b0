package bench

import (
	"context"
	"fmt"
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

// BenchmarkLeftBehind measures what locking leaves in Redis: 10,000 distinct keys, each
// obtained and released once with a 1 s TTL, by locklib, go-redsync/redsync v4 and
// bsm/redislock, each on a redis-server of its own, in the same run; and locklib's locks
// obtained and never released (a crashed holder). Reported per library: the keys and the
// used_memory (INFO memory) above the empty server right after, after the TTL (1.5 s) and
// after locklib's ended window (protocol's 10 s, at 11.5 s), and bytes per distinct key:
//
//	cd bench && go test -run '^$' -bench LeftBehind -benchtime 1x
func BenchmarkLeftBehind(b *testing.B) {
	const (
		keys = 10_000
		ttl  = time.Second
	)
	ctx := context.Background()
	type contender struct {
		name string
		// locker returns the library's obtain+release (or obtain only) on rdb.
		locker func(b *testing.B, rdb *redis.Client) func(key string) error
	}
	locklibCycle := func(release bool) func(b *testing.B, rdb *redis.Client) func(key string) error {
		return func(b *testing.B, rdb *redis.Client) func(key string) error {
			c := locklib.New(rdb)
			b.Cleanup(func() { _ = c.Close() })
			return func(key string) error {
				l, err := c.Obtain(ctx, key, ttl)
				if err != nil || !release { // not released: the holder crashed
					return err
				}
				return l.Release(ctx)
			}
		}
	}
	contenders := []contender{
		{"locklib", locklibCycle(true)},
		{"locklib-crashed", locklibCycle(false)},
		{"redsync", func(b *testing.B, rdb *redis.Client) func(key string) error {
			rs := redsync.New(goredis.NewPool(rdb))
			return func(key string) error {
				m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
				if err := m.LockContext(ctx); err != nil {
					return err
				}
				_, err := m.UnlockContext(ctx)
				return err
			}
		}},
		{"bsm", func(b *testing.B, rdb *redis.Client) func(key string) error {
			c := redislock.New(rdb)
			return func(key string) error {
				l, err := c.Obtain(ctx, key, ttl, nil)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			}
		}},
	}
	servers := redistest.StartN(b, len(contenders))
	for b.Loop() {
		type sample struct{ keys, bytes int64 }
		empty := make([]sample, len(contenders))
		samples := make([][]sample, len(contenders))
		measure := func(rdb *redis.Client) sample {
			n, err := rdb.DBSize(ctx).Result()
			if err != nil {
				b.Fatal(err)
			}
			return sample{n, usedMemory(b, ctx, rdb)}
		}
		clients := make([]*redis.Client, len(contenders))
		for i, c := range contenders {
			rdb := servers[i].Client()
			defer rdb.Close()
			clients[i] = rdb
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			// The first lock loads what a library loads once (scripts, functions).
			lock := c.locker(b, rdb)
			if err := lock("lock:warm-up"); err != nil {
				b.Fatal(err)
			}
			time.Sleep(ttl + 200*time.Millisecond)
			if err := rdb.FlushDB(ctx).Err(); err != nil { // the keys, not the functions
				b.Fatal(err)
			}
			empty[i] = measure(rdb)
			for k := range keys {
				if err := lock(fmt.Sprintf("lock:order:%d", k)); err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
			}
			samples[i] = append(samples[i], measure(rdb))
		}
		// Waits from the end of the last run: each library's last lock is at least that old.
		for _, wait := range []time.Duration{ttl + 500*time.Millisecond, 10 * time.Second} {
			time.Sleep(wait)
			for i := range contenders {
				samples[i] = append(samples[i], measure(clients[i]))
			}
		}
		for i, c := range contenders {
			for j, when := range []string{"after", "after-ttl", "after-11.5s"} {
				s := samples[i][j]
				b.ReportMetric(float64(s.keys), c.name+":keys-"+when)
				b.ReportMetric(float64(s.bytes-empty[i].bytes)/keys, c.name+":bytes/key-"+when)
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// usedMemory is INFO memory's used_memory.
func usedMemory(b *testing.B, ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}
