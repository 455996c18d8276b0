package locklib

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// rawRelease is the minimal compare-and-delete a hand-written lock would use.
var rawRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// BenchmarkUncontendedCycle compares one uncontended Obtain+Release with a raw go-redis
// SET NX PX + EVALSHA compare-and-delete cycle. The machine is shared and noisy, so each
// iteration runs one cycle of every variant, interleaved, against the same server, and
// the metrics are the mean time per cycle of each and the ratios:
//
//	go test -run '^$' -bench UncontendedCycle -benchtime 20000x -count 5 ./locklib
func BenchmarkUncontendedCycle(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	rdb := srv.Client()
	withEvents := New(srv.Client())
	defer withEvents.Close()
	noEvents := New(srv.Client(), WithEvents(false))
	defer noEvents.Close()
	// A go-redis client that ends reads at the context's deadline lets Release call it
	// directly; with the default options Release's 2 s bound takes a goroutine (callBounded).
	ctxTimeouts := New(srv.Client(func(o *redis.Options) { o.ContextTimeoutEnabled = true }))
	defer ctxTimeouts.Close()

	var buf [8]byte
	raw := func() {
		_, _ = rand.Read(buf[:])
		value := hex.EncodeToString(buf[:])
		ok, err := rdb.SetNX(ctx, "lock:bench:raw", value, 10*time.Second).Result()
		if err != nil || !ok {
			b.Fatalf("SET NX: %v %v", ok, err)
		}
		if err := rawRelease.Run(ctx, rdb, []string{"lock:bench:raw"}, value).Err(); err != nil {
			b.Fatal(err)
		}
	}
	cycle := func(c *Client) func() {
		return func() {
			l, err := c.Obtain(ctx, "lock:bench:locklib", 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	ops := New(rdb) // only for operation ids
	defer ops.Close()
	scripts := newScriptRunner(rdb)
	scriptsOnly := func() {
		v, op := protocol.NewValue("n", "", time.Now()).String(), ops.nextOpID()
		before, after, _ := protocol.AroundStamp(v)
		reply, err := scripts.run(ctx, scriptAcquire, lockKeys("lock:so"), v, 10000, "", op, "", 1750, 10000, "", "", before, after).Slice()
		if err != nil || len(reply) < 2 {
			b.Fatal(reply, err)
		}
		if err := scripts.run(ctx, scriptRelease, lockKeys("lock:so"), reply[1], op, "0", "", "x", 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	mean := interleaved(b, raw, cycle(withEvents), cycle(noEvents), scriptsOnly, cycle(ctxTimeouts))
	b.ReportMetric(mean[0], "raw-ns/cycle")
	b.ReportMetric(mean[1], "locklib-ns/cycle")
	b.ReportMetric(mean[2], "locklib-noevents-ns/cycle")
	b.ReportMetric(mean[1]/mean[0], "locklib/raw")
	b.ReportMetric(mean[2]/mean[0], "noevents/raw")
	b.ReportMetric(mean[3]/mean[0], "scripts/raw")
	b.ReportMetric(mean[4]/mean[0], "ctxtimeouts/raw")
}

// interleaved runs one cycle of every variant per iteration of b, in turn, against the same
// server, after one warm-up cycle each (connections, the function library), and returns the
// mean ns per cycle of each: on a shared, noisy machine only ratios within one run mean much.
func interleaved(b *testing.B, variants ...func()) []float64 {
	spent := make([]time.Duration, len(variants))
	for _, v := range variants {
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
	mean := make([]float64, len(variants))
	for i := range spent {
		mean[i] = float64(spent[i].Nanoseconds()) / float64(max(n, 1))
	}
	return mean
}

// BenchmarkObtainRelease is one uncontended Obtain+Release with default options, for its
// allocations (go-redis's included):
//
//	go test -run '^$' -bench ObtainRelease -benchmem -benchtime 20000x ./locklib
func BenchmarkObtainRelease(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c := New(srv.Client())
	defer c.Close()
	for b.Loop() {
		l, err := c.Obtain(ctx, "lock:bench:allocs", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
