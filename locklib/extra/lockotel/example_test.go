package lockotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockotel"
)

// The examples run in go test without a Redis server or a collector: they start an
// in-process miniredis and install an SDK that keeps what it records in memory. Lines
// marked "// setup" do that and print it; docs/locklib.md shows the examples without them
// (internal/docs).

// ExampleNewMetrics passes the metrics' Observe to the Client; they go to the global
// MeterProvider (or lockotel.WithMeterProvider's).
func ExampleNewMetrics() {
	addr, stop := startRedis()                                                      // setup: an in-process Redis at addr
	defer stop()                                                                    // setup
	reader := sdkmetric.NewManualReader()                                           // setup: an SDK read by hand
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))) // setup

	metrics, err := lockotel.NewMetrics() // lockotel.WithName(func(key string) string) to name locks yourself
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithObserver(metrics.Observe))
	defer c.Close()

	l, err := c.Obtain(ctx, "lock:orders:42", 10*time.Second) // name="orders"
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... the work under the lock ...
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	showMetrics(reader, "locklib.obtained", "locklib.held") // setup
	// Output:
	// locklib.obtained {name=orders} 1
	// locklib.held {name=orders} 0
}

// ExampleNewTracer makes Obtain, TryObtain and Release spans of the global TracerProvider
// (or lockotel.WithTracerProvider's), children of the span in the caller's context.
func ExampleNewTracer() {
	addr, stop := startRedis()                                                            // setup: an in-process Redis at addr
	defer stop()                                                                          // setup
	spans := tracetest.NewSpanRecorder()                                                  // setup: an SDK that keeps the spans
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))) // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithTracer(lockotel.NewTracer()))
	defer c.Close()

	l, err := c.Obtain(ctx, "lock:orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	showSpans(spans) // setup
	// Output:
	// locklib.Obtain obtained
	// locklib.Release ok
}

// startRedis starts an in-process miniredis for an example; stop closes it.
func startRedis() (addr string, stop func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	return m.Addr(), m.Close
}

// showSpans prints the ended spans' names and outcomes.
func showSpans(spans *tracetest.SpanRecorder) {
	for _, s := range spans.Ended() {
		attrs := attribute.NewSet(s.Attributes()...)
		outcome, _ := attrs.Value("lock.outcome")
		fmt.Println(s.Name(), outcome.String())
	}
}

// showMetrics prints the named instruments' points (a histogram's count).
func showMetrics(reader *sdkmetric.ManualReader, names ...string) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, name := range names {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
					for _, p := range sum.DataPoints {
						fmt.Printf("%s {%s} %d\n", name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
					}
				}
			}
		}
	}
}
