package locklib

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// BenchmarkObtainMulti compares one uncontended ObtainMulti of 3 keys and its Release with
// the usual workaround where a library has no multi-key lock (3 Obtains one after the other
// in sorted key order, so that two sets cannot deadlock, and 3 Releases), and with one plain
// Obtain and Release. The machine is shared and noisy, so each iteration runs one cycle of
// every variant, interleaved, against the same server; the metrics are the mean time per
// cycle of each and the ratios:
//
//	go test -run '^$' -bench ObtainMulti -benchtime 5000x -count 5 ./locklib
func BenchmarkObtainMulti(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c := New(srv.Client())
	defer c.Close()
	keys := []string{"lock:{bench}:payment", "lock:{bench}:stock", "lock:{bench}:invoice"}
	sorted := slices.Sorted(slices.Values(keys))
	multi := func() {
		l, err := c.ObtainMulti(ctx, keys, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	sequential := func() {
		var held []*Lock
		for _, key := range sorted {
			l, err := c.Obtain(ctx, key, 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			held = append(held, l)
		}
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	plain := func() {
		l, err := c.Obtain(ctx, "lock:{bench}:single", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	variants := []func(){multi, sequential, plain}
	var spent [3]time.Duration
	for _, v := range variants { // warm up connections and script caches
		v()
	}
	n := 0
	for b.Loop() {
		for i, v := range variants {
			start := time.Now()
			v()
			spent[i] += time.Since(start)
		}
		n++
	}
	per := func(i int) float64 { return float64(spent[i].Nanoseconds()) / float64(n) }
	b.ReportMetric(per(0), "multi3-ns/cycle")
	b.ReportMetric(per(1), "sequential3-ns/cycle")
	b.ReportMetric(per(2), "plain-ns/cycle")
	b.ReportMetric(per(0)/per(2), "multi3/plain")
	b.ReportMetric(per(1)/per(2), "sequential3/plain")
	b.ReportMetric(per(0)/per(1), "multi3/sequential3")
}
