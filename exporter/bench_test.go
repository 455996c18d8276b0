package exporter

import (
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// benchLocks feeds n synthetic locks in batches of 1000, as a Watch's first pass does: 200
// would-be groups (100 pass, the rest fold), three formats, every third without expiry,
// every other one with an acquisition stamp and waiters. It returns the time Apply took.
func benchLocks(e *Exporter, n int) (applying time.Duration) {
	formats := []scanner.Format{scanner.FormatLockscope, scanner.FormatRedisson, scanner.FormatOpaque}
	batch := make([]scanner.Lock, 0, 1000)
	for i := range n {
		l := scanner.Lock{Key: fmt.Sprintf("lock:g%03d:%07d", i%200, i), Format: formats[i%3], FetchedAt: t0,
			TTL: time.Duration(i%3600) * time.Second, NoExpiry: i%3 == 2, HasWaiters: true}
		if i%2 == 0 {
			l.AcquiredAt, l.Waiters = t0.Add(-time.Duration(i%900)*time.Second), i%4
		}
		batch = append(batch, l)
		if len(batch) == cap(batch) || i == n-1 {
			start := time.Now()
			e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: batch})
			applying += time.Since(start)
			batch = make([]scanner.Lock, 0, 1000) // the stream hands over a new slice each time
		}
	}
	return applying
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkScrape: one scrape (aggregate + write) of a census of 10,000, 100,000 and
// 1,000,000 locks, side by side; bytes/lock is the heap the census holds per lock (the key
// included), ingest-ns/lock the cost of taking a batch from the stream.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("locks=%d", n), func(b *testing.B) {
			before := heapInUse()
			e := New(standalone, Options{Now: func() time.Time { return t0.Add(time.Second) }})
			ingest := benchLocks(e, n)
			held := heapInUse() - before
			for b.Loop() {
				if err := e.WriteMetrics(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(held)/float64(n), "bytes/lock")
			b.ReportMetric(float64(ingest.Nanoseconds())/float64(n), "ingest-ns/lock")
			runtime.KeepAlive(e)
		})
	}
}
