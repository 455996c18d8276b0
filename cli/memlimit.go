package cli

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The console keeps a census of every lock in memory and replaces it pass after pass. With the
// collector's default (GOGC=100: let the heap grow to twice what was live after the last
// collection) and the freed pages returned to the system lazily, a console on 1,000,000 locks
// held 1.3-1.5 GB of RSS for some 300 MB of live data (docs/benchmarks/tui.md). A soft memory
// limit that follows the live heap (a quarter more, at least 64 MiB more) makes the collector
// run before the heap doubles and return what it frees; it grows with the census, so a larger
// one never pins the collector at the limit. A quarter rather than a half: 587 against 692 MB
// peak on a million locks, for 44 % of a core instead of 37 %.
const (
	memoryHeadroom    = 4 // the limit is live + live/memoryHeadroom
	minMemoryHeadroom = 64 << 20
	memoryLimitEvery  = 500 * time.Millisecond
)

// followLiveHeap keeps the process's soft memory limit at the live heap plus its headroom until
// ctx ends, unless the operator set GOMEMLIMIT. The first limit comes after one period: at the
// start the live heap is near nothing, and a limit of 64 MiB over it made the collector run
// through the connection and the first scan batch, before the first rows (docs/benchmarks/tui.md).
func followLiveHeap(ctx context.Context) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(memoryLimitEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(live)
		if v := live[0].Value; v.Kind() == metrics.KindUint64 {
			n := int64(v.Uint64())
			debug.SetMemoryLimit(n + max(n/memoryHeadroom, minMemoryHeadroom))
		}
	}
}
