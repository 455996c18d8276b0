package lockotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockotel"
)

// BenchmarkObserve is the metrics' own cost for one lock: its acquired and released
// Observations, into the SDK.
//
//	cd locklib/extra/lockotel && go test -run '^$' -bench Observe -benchmem
func BenchmarkObserve(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := lockotel.NewMetrics(lockotel.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	acquired := locklib.Observation{Type: locklib.EventAcquired, Key: "lock:orders:42", Wait: time.Millisecond}
	released := locklib.Observation{Type: locklib.EventReleased, Key: "lock:orders:42", Hold: time.Second}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(acquired)
		m.Observe(released)
	}
}

// BenchmarkCycleWithTelemetry times one uncontended Obtain+Release without, and with the
// metrics and the spans (the SDK records them, nothing exports them), alternately on one
// server, and reports both and their ratio.
//
//	cd locklib/extra/lockotel && go test -run '^$' -bench CycleWithTelemetry -benchtime 20000x
func BenchmarkCycleWithTelemetry(b *testing.B) {
	srv := redistest.Start(b)
	plain := locklib.New(srv.Client())
	defer plain.Close()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	m, err := lockotel.NewMetrics(lockotel.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	observed := locklib.New(srv.Client(), locklib.WithObserver(m.Observe),
		locklib.WithTracer(lockotel.NewTracer(lockotel.WithTracerProvider(tp))))
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
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "µs/telemetry")
	b.ReportMetric(float64(took[1])/float64(took[0]), "telemetry/plain")
}
