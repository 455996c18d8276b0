package lockprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockprom"
)

// BenchmarkObserve is the observer's own cost for one lock: its acquired and released
// Observations.
//
//	cd locklib/extra/lockprom && go test -run '^$' -bench Observe -benchmem
func BenchmarkObserve(b *testing.B) {
	m := lockprom.New()
	acquired := locklib.Observation{Type: locklib.EventAcquired, Key: "lock:orders:42", Wait: time.Millisecond}
	released := locklib.Observation{Type: locklib.EventReleased, Key: "lock:orders:42", Hold: time.Second}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(acquired)
		m.Observe(released)
	}
}

// BenchmarkCycleWithMetrics times one uncontended Obtain+Release without and with the
// metrics, alternately on one server, and reports both and their ratio.
//
//	cd locklib/extra/lockprom && go test -run '^$' -bench CycleWithMetrics -benchtime 20000x
func BenchmarkCycleWithMetrics(b *testing.B) {
	srv := redistest.Start(b)
	plain := locklib.New(srv.Client())
	defer plain.Close()
	m := lockprom.New()
	observed := locklib.New(srv.Client(), locklib.WithObserver(m.Observe))
	defer observed.Close()
	ctx := context.Background()
	var took [2]time.Duration
	for b.Loop() {
		for i, c := range []*locklib.Client{plain, observed} {
			start := time.Now()
			l, err := c.Obtain(ctx, "lock:bench:1", 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "µs/plain")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "µs/metrics")
	b.ReportMetric(float64(took[1])/float64(took[0]), "metrics/plain")
}
