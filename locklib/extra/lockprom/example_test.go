package lockprom_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockprom"
)

// The example runs in go test without a Redis server: it starts an in-process miniredis.
// Lines marked "// setup" do that and print the metrics; docs/locklib.md shows it without
// them (internal/docs).

// Example registers the metrics once and passes their Observe to the Client (to every
// Client of the process, when there are several).
func Example() {
	mr := miniredis.NewMiniRedis()     // setup: an in-process Redis at addr
	if err := mr.Start(); err != nil { // setup
		panic(err) // setup
	} // setup
	defer mr.Close()  // setup
	addr := mr.Addr() // setup

	metrics := lockprom.New() // lockprom.WithName(func(key string) string) to name locks yourself
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics) // served by promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

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
	show(metrics, "locklib_obtained_total", "locklib_held") // setup
	// Output:
	// # HELP locklib_held Locks held now: obtained, and not released or lost yet.
	// # TYPE locklib_held gauge
	// locklib_held{name="orders"} 0
	// # HELP locklib_obtained_total Locks obtained by Obtain or TryObtain (each level of a re-entrant lock counts).
	// # TYPE locklib_obtained_total counter
	// locklib_obtained_total{name="orders"} 1
}

// show prints the named metrics in Prometheus' text format.
func show(c prometheus.Collector, names ...string) {
	text, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
}
