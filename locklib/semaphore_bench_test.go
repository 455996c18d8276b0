package locklib

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// BenchmarkSemaphoreCycle compares one uncontended Acquire+Release of a lease semaphore's
// permit (10 permits, 0 or 5 of them held by others) with one uncontended Obtain+Release of
// a plain lock, interleaved in each iteration against the same server (the machine is
// shared and noisy): the metrics are the mean time per cycle of each and the ratios.
//
//	go test -run '^$' -bench SemaphoreCycle -benchtime 20000x -count 5 ./locklib
func BenchmarkSemaphoreCycle(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c := New(srv.Client())
	defer c.Close()
	empty, busy := c.Semaphore("lock:bench:sem", 10), c.Semaphore("lock:bench:sem-busy", 10)
	for range 5 { // others' permits: the acquire scans the lease set for its own member
		l, err := busy.Acquire(ctx, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Release(ctx)
	}
	lock := func() {
		l, err := c.Obtain(ctx, "lock:bench:lock", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	permit := func(s *Semaphore) func() {
		return func() {
			l, err := s.Acquire(ctx, 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	mean := interleaved(b, lock, permit(empty), permit(busy))
	b.ReportMetric(mean[0], "lock-ns/cycle")
	b.ReportMetric(mean[1], "permit-ns/cycle")
	b.ReportMetric(mean[2], "permit5held-ns/cycle")
	b.ReportMetric(mean[1]/mean[0], "permit/lock")
	b.ReportMetric(mean[2]/mean[0], "permit5held/lock")
}
