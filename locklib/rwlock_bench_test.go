package locklib

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// BenchmarkRWCycle compares one uncontended read cycle (ObtainRead+Release) and write cycle
// (ObtainWrite+Release) with the plain Obtain+Release cycle, interleaved on one server as
// BenchmarkUncontendedCycle does (the machine is noisy), and a read cycle while 8 other
// readers hold the lock (the acquire scans the lease set). No Go peer has read-write locks
// (redsync and bsm/redislock have none), so the plain cycle is the yardstick:
//
//	go test -run '^$' -bench RWCycle -benchtime 20000x -count 3 ./locklib
func BenchmarkRWCycle(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c := New(srv.Client())
	defer c.Close()
	cycle := func(obtain func(context.Context, string, time.Duration, ...LockOption) (*Lock, error), key string) func() {
		return func() {
			l, err := obtain(ctx, key, 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	const crowded = "lock:bench:rw:crowded"
	for range 8 {
		l, err := c.ObtainRead(ctx, crowded, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Release(ctx)
	}
	per := interleaved(b,
		cycle(c.Obtain, "lock:bench:plain"),
		cycle(c.ObtainRead, "lock:bench:rw:read"),
		cycle(c.ObtainWrite, "lock:bench:rw:write"),
		cycle(c.ObtainRead, crowded),
	)
	b.ReportMetric(per[0], "plain-ns/cycle")
	b.ReportMetric(per[1], "read-ns/cycle")
	b.ReportMetric(per[2], "write-ns/cycle")
	b.ReportMetric(per[1]/per[0], "read/plain")
	b.ReportMetric(per[2]/per[0], "write/plain")
	b.ReportMetric(per[3]/per[0], "read8/plain")
}
