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

// Register the metrics once, and pass their Observe to every Client. A real program serves
// the registry with promhttp.Handler; this example prints two of the metrics instead, and
// runs on an in-process miniredis instead of a Redis server.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	metrics := lockprom.New() // lockprom.WithName(func(key string) string { ... }) to name locks yourself
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	client := locklib.New(rdb, locklib.WithObserver(metrics.Observe))
	defer client.Close()

	ctx := context.Background()
	l, err := client.Obtain(ctx, "lock:orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... work under the lock ...
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}

	text, err := testutil.CollectAndFormat(metrics, expfmt.TypeTextPlain, "locklib_obtained_total", "locklib_held")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # HELP locklib_held Locks held now: obtained, and not released or lost yet.
	// # TYPE locklib_held gauge
	// locklib_held{name="orders"} 0
	// # HELP locklib_obtained_total Locks obtained by Obtain or TryObtain (each level of a re-entrant lock counts).
	// # TYPE locklib_obtained_total counter
	// locklib_obtained_total{name="orders"} 1
}
