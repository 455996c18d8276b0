package locklib

import (
	"math/rand/v2"
	"time"
)

// backoff is exponential back-off with full jitter: each wait is uniform in [0, step] and
// step doubles up to cap. Full jitter spreads pollers out instead of letting them retry in
// lock-step.
type backoff struct {
	step, cap time.Duration
}

func newBackoff(base, cap time.Duration) backoff { return backoff{step: base, cap: cap} }

func (b *backoff) next() time.Duration {
	d := time.Duration(rand.Int64N(int64(b.step) + 1))
	b.step = min(b.step*2, b.cap)
	return d
}
