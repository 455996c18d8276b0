package redistest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// LockKey is the name of lock i that LoadLocks writes.
func LockKey(i int) string { return fmt.Sprintf("lock:bench:%07d", i) }

// LoadLocks writes n lockscope-format locks (LockKey(0) ...; value
// worker-<i%64>:-:1764400000123:<i as 16 hex>, TTL 1 h) with pipelined SET ... PX on 4
// connections: the keyspace of the million-lock benchmarks.
func LoadLocks(tb testing.TB, c *redis.Client, n int) {
	tb.Helper()
	loadPipelined(tb, c, n, func(ctx context.Context, pipe redis.Pipeliner, i int) {
		pipe.Set(ctx, LockKey(i), fmt.Sprintf("worker-%d:-:1764400000123:%016x", i%64, i), time.Hour)
	})
}

// loadPipelined queues write(i) for i in [0, n) in pipelines of 1000 locks on 4 connections.
func loadPipelined(tb testing.TB, c *redis.Client, n int, write func(ctx context.Context, pipe redis.Pipeliner, i int)) {
	tb.Helper()
	const workers = 4
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			for start := w * 1000; start < n && failed.Load() == nil; start += workers * 1000 {
				pipe := c.Pipeline()
				for i := start; i < min(start+1000, n); i++ {
					write(ctx, pipe, i)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					failed.Store(&err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(*err)
	}
}

// PipelinedFloor is the floor of a census, what the benchmarks compare against: SCAN MATCH
// pattern COUNT 1000 with pipelined PTTL + GETRANGE 0 4095 per page (PTTL only without
// values) and two pages in flight, nothing decoded or kept. It returns the keys read.
func PipelinedFloor(ctx context.Context, c *redis.Client, pattern string, values bool) (int, error) {
	pages := make(chan []string, 1)
	var count atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for keys := range pages {
				pipe := c.Pipeline()
				for _, k := range keys {
					pipe.PTTL(ctx, k)
					if values {
						pipe.GetRange(ctx, k, 0, 4095)
					}
				}
				if _, err := pipe.Exec(ctx); err != nil {
					failed.Store(&err)
					continue // drain the pages, so the SCAN loop does not block
				}
				count.Add(int64(len(keys)))
			}
		})
	}
	var cursor uint64
	var err error
	for {
		var keys []string
		keys, cursor, err = c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			break
		}
		pages <- keys
		if cursor == 0 {
			break
		}
	}
	close(pages)
	wg.Wait()
	if e := failed.Load(); e != nil && err == nil {
		err = *e
	}
	return int(count.Load()), err
}
