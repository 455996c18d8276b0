package locklib

import (
	"context"
	"slices"
	"sync"
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
	per := interleaved(b, multi, sequential, plain)
	b.ReportMetric(per[0], "multi3-ns/cycle")
	b.ReportMetric(per[1], "sequential3-ns/cycle")
	b.ReportMetric(per[2], "plain-ns/cycle")
	b.ReportMetric(per[0]/per[2], "multi3/plain")
	b.ReportMetric(per[1]/per[2], "sequential3/plain")
	b.ReportMetric(per[0]/per[1], "multi3/sequential3")
}

// BenchmarkObtainMultiContended runs 8 goroutines on one Client, each taking random sets of 2
// of 4 keys and holding each set 1 ms, first with ObtainMulti and then with the workaround
// (sorted sequential Obtains, each queued FIFO while the earlier keys are held), in
// alternating rounds of 200 sets each. The metrics are sets per second and the p99 time to
// take a set, for each, and their ratios:
//
//	go test -run '^$' -bench ObtainMultiContended -benchtime 4x ./locklib
func BenchmarkObtainMultiContended(b *testing.B) {
	srv := redistest.Start(b)
	c := New(srv.Client())
	defer c.Close()
	ctx := context.Background()
	const workers, perRound, hold = 8, 200, time.Millisecond
	keys := []string{"lock:{contend}:0", "lock:{contend}:1", "lock:{contend}:2", "lock:{contend}:3"}
	take := map[string]func(set []string) (func(), error){
		"multi": func(set []string) (func(), error) {
			l, err := c.ObtainMulti(ctx, set, 10*time.Second)
			if err != nil {
				return nil, err
			}
			return func() { _ = l.Release(ctx) }, nil
		},
		"sequential": func(set []string) (func(), error) {
			set = slices.Sorted(slices.Values(set))
			var held []*Lock
			for _, key := range set {
				l, err := c.Obtain(ctx, key, 10*time.Second)
				if err != nil {
					return nil, err
				}
				held = append(held, l)
			}
			return func() {
				for _, l := range held {
					_ = l.Release(ctx)
				}
			}, nil
		},
	}
	spent := map[string]time.Duration{}
	waits := map[string][]time.Duration{}
	round := func(name string) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		next := make(chan []string, perRound)
		for i := range perRound {
			next <- []string{keys[i%4], keys[(i+1+i/4%3)%4]} // two distinct keys
		}
		close(next)
		start := time.Now()
		for range workers {
			wg.Go(func() {
				for set := range next {
					began := time.Now()
					release, err := take[name](set)
					if err != nil {
						b.Error(err)
						return
					}
					waited := time.Since(began)
					time.Sleep(hold)
					release()
					mu.Lock()
					waits[name] = append(waits[name], waited)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		spent[name] += time.Since(start)
	}
	for b.Loop() {
		round("multi")
		round("sequential")
	}
	p99 := func(name string) float64 {
		w := slices.Sorted(slices.Values(waits[name]))
		return float64(w[len(w)*99/100].Microseconds())
	}
	rate := func(name string) float64 { return float64(len(waits[name])) / spent[name].Seconds() }
	b.ReportMetric(rate("multi"), "multi-sets/s")
	b.ReportMetric(rate("sequential"), "sequential-sets/s")
	b.ReportMetric(rate("multi")/rate("sequential"), "multi/sequential-rate")
	b.ReportMetric(p99("multi"), "multi-p99-µs")
	b.ReportMetric(p99("sequential"), "sequential-p99-µs")
}
