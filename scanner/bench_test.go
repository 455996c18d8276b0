package scanner

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// BenchmarkCensus: a census of 10,000 locks on one server (runs with -bench=.).
func BenchmarkCensus(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client()
	loadLocks(b, c, "b", 10_000)
	s := New(standalone(c, srv.Addr), Options{})
	b.ResetTimer()
	for b.Loop() {
		census, err := s.Census(context.Background())
		if err != nil || len(census.Locks) != 10_000 {
			b.Fatalf("census: %d locks, %v", len(census.Locks), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/lock")
}

// BenchmarkCensusLeaseSets: a census of 10,000 lockscope read-write locks of 3 readers each
// (lease sets: TYPE, then ZRANGE, the limit and the wait queue per set), to set against
// BenchmarkCensus's 10,000 string locks.
func BenchmarkCensusLeaseSets(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client()
	ctx := context.Background()
	now := time.Now()
	for start := 0; start < 10_000; start += 1000 {
		pipe := c.Pipeline()
		for i := start; i < start+1000; i++ {
			key := fmt.Sprintf("lock:b:%07d", i)
			for j := range 3 {
				pipe.ZAdd(ctx, key, redisZ(float64(now.Add(time.Hour).UnixMilli()),
					leaseMember(protocol.ModeRead, fmt.Sprintf("%s:%d", opID, j), "node", fmt.Sprintf("%016x", 4*i+j), now)))
			}
			pipe.PExpire(ctx, key, time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	s := New(standalone(c, srv.Addr), Options{})
	b.ResetTimer()
	for b.Loop() {
		census, err := s.Census(ctx)
		if err != nil || len(census.Locks) != 10_000 || census.Locks[0].Kind() != KindRWLock {
			b.Fatalf("census: %d locks, %v", len(census.Locks), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/lock")
}

// BenchmarkCensusMillion compares, in one run on one server holding 1,000,000 lock keys:
// the scanner's census (key + holder + TTL decoded), `redis-cli --scan --pattern 'lock:*'`
// (names only), a minimal go-redis loop (SCAN COUNT 1000, pipelined PTTL + GETRANGE, two
// batches in flight), the same loop reading PTTL only (the least any census that shows TTLs
// must ask the server), and the census again with SCAN COUNT 5000 instead of 1000. It also
// times how long Watch takes to deliver its first rows on that keyspace, and reads the
// server's CPU time (INFO cpu) around the census: how much of it the server was busy.
// Heap: the peak during the default census and the live heap its result keeps. It is
// opt-in: it runs only when -bench names it (-bench=CensusMillion), not with -bench=. .
// docs/benchmarks/scanner.md has the command and results.
func BenchmarkCensusMillion(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "Million") {
		b.Skip("opt-in: run with -bench=CensusMillion")
	}
	const n = 1_000_000
	srv := redistest.Start(b)
	c := srv.Client()
	loadStart := time.Now()
	redistest.LoadLocks(b, c, n)
	b.Logf("loaded %d keys in %v", n, time.Since(loadStart).Round(time.Millisecond))

	var cli, minimal, ttlOnly, census, census5000, firstRows, censusServerCPU time.Duration
	var peak, live uint64
	b.ResetTimer()
	for b.Loop() {
		cli += timeIt(b, func() int { return redisCLIScan(b, srv.Port) }, n)
		minimal += timeIt(b, func() int { return floor(b, c, true) }, n)
		ttlOnly += timeIt(b, func() int { return floor(b, c, false) }, n)
		runtime.GC()
		var p uint64
		var res Census
		cpuBefore := serverCPU(b, c)
		census += timeIt(b, func() int {
			p = peakHeap(func() {
				var err error
				res, err = New(standalone(c, srv.Addr), Options{}).Census(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				for i := range res.Locks { // decoded: every lock has a holder and a TTL
					if res.Locks[i].Node == "" || res.Locks[i].TTL <= 0 {
						b.Fatalf("undecoded lock %+v", res.Locks[i])
					}
				}
			})
			return len(res.Locks)
		}, n)
		censusServerCPU += serverCPU(b, c) - cpuBefore
		peak = max(peak, p)
		live = max(live, liveHeap()) // what the result keeps, outside the timed census
		runtime.KeepAlive(res)
		res = Census{}
		runtime.GC()
		firstRows += watchFirstRows(b, New(standalone(c, srv.Addr), Options{}))
		census5000 += timeIt(b, func() int { // the same census with SCAN COUNT 5000
			res, err := New(standalone(c, srv.Addr), Options{Count: 5000}).Census(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			return len(res.Locks)
		}, n)
	}
	b.StopTimer()
	runs := time.Duration(b.N)
	b.ReportMetric((census / runs).Seconds(), "census-s")
	b.ReportMetric((cli / runs).Seconds(), "rediscli-s")
	b.ReportMetric((minimal / runs).Seconds(), "minimal-s")
	b.ReportMetric((ttlOnly / runs).Seconds(), "pttl-only-s")
	b.ReportMetric(float64(cli)/float64(ttlOnly), "x-pttl-only-vs-rediscli")
	b.ReportMetric((census5000 / runs).Seconds(), "census-count5000-s")
	b.ReportMetric(float64((firstRows/runs).Microseconds())/1000, "watch-first-rows-ms")
	b.ReportMetric((censusServerCPU / runs).Seconds(), "census-server-cpu-s")
	b.ReportMetric(float64(cli)/float64(census), "x-faster-than-rediscli")
	b.ReportMetric(float64(census)/float64(minimal), "x-of-minimal")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(live)/(1<<20), "live-heap-MB")
	b.ReportMetric(float64(rssHighWater())/(1<<20), "rss-hwm-MB")
}

// floor runs redistest.PipelinedFloor and counts the keys it read.
func floor(b *testing.B, c *redis.Client, values bool) int {
	n, err := redistest.PipelinedFloor(context.Background(), c, DefaultPattern, values)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func timeIt(b *testing.B, f func() int, want int) time.Duration {
	start := time.Now()
	if got := f(); got != want {
		b.Fatalf("found %d keys, want %d", got, want)
	}
	return time.Since(start)
}

// serverCPU is the CPU time redis-server's main thread has used (INFO cpu).
func serverCPU(b *testing.B, c *redis.Client) time.Duration {
	d, err := infoCPU(context.Background(), c, "used_cpu_sys_main_thread:", "used_cpu_user_main_thread:")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// watchFirstRows starts a Watch and returns how long it took to deliver its first batch of
// rows, then stops it.
func watchFirstRows(b *testing.B, s *Scanner) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	updates := s.Watch(ctx)
	for u := range updates {
		switch u.Kind {
		case UpdateBatch:
			took := time.Since(start)
			cancel()
			for range updates { // Watch closes the channel once it has stopped
			}
			return took
		case UpdateError:
			b.Fatal(u.Err)
		}
	}
	b.Fatal("watch ended without rows")
	return 0
}

// redisCLIScan runs redis-cli --scan and counts the names it prints.
func redisCLIScan(b *testing.B, port int) int {
	cmd := exec.Command("redis-cli", "-p", strconv.Itoa(port), "--scan", "--pattern", "lock:*")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines++
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	return lines
}

// peakHeap runs f and returns the highest heap in use (live and not yet collected objects
// plus free space in heap spans, like MemStats.HeapInuse) sampled every 10 ms while it ran.
// runtime/metrics reads without stopping the world, so sampling does not slow f down.
func peakHeap(f func()) uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	inUse := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64()
	}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := inUse(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return max(peak.Load(), inUse())
}

// liveHeap is the heap's live objects after a full collection: what the caller still holds.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rssHighWater is the process's peak resident set (VmHWM), 0 when unknown.
func rssHighWater() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
