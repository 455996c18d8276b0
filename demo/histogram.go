package demo

import (
	"math"
	"time"
)

// histogram records durations in logarithmic buckets (5% wide), so percentiles of a run of
// any length cost a fixed 4 KiB and a walk over the buckets, never a sort of every sample.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histBase    = float64(time.Microsecond) // the first bucket ends at 1µs
	histGrowth  = 1.05
	histBuckets = 500 // 1µs * 1.05^500 ≈ 11 h; longer samples share the last bucket
)

var histLogGrowth = math.Log(histGrowth)

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	if float64(d) > histBase {
		i = int(math.Ceil(math.Log(float64(d)/histBase) / histLogGrowth))
	}
	h.counts[min(i, histBuckets-1)]++
	h.n++
	h.max = max(h.max, d)
}

// quantile is the q-quantile (0 < q <= 1): the upper bound of the bucket holding that sample,
// at most 5% above the true value and never above the largest sample; 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == histBuckets-1 {
				return h.max
			}
			upper := time.Duration(histBase * math.Pow(histGrowth, float64(i)))
			return min(upper, h.max)
		}
	}
	return h.max
}
