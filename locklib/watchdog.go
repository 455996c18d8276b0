package locklib

import (
	"context"
	"errors"
	"time"
)

// watchdog renews a lock every ttl/3 until stopped, capped, or the lock is lost.
type watchdog struct {
	cancel context.CancelFunc // ends the loop and any renewal in flight
	done   chan struct{}      // closed when the goroutine has returned
}

func startWatchdog(l *Lock, lc lockConfig) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchdog{cancel: cancel, done: make(chan struct{})}
	go w.run(ctx, l, lc)
	return w
}

// stop ends the watchdog and waits until no renewal can still be in flight, so Release's
// script is never raced by a renewal.
func (w *watchdog) stop() {
	w.cancel()
	<-w.done
}

func (w *watchdog) run(ctx context.Context, l *Lock, lc lockConfig) {
	defer close(w.done)
	defer w.cancel()
	interval := max(l.ttl/3, time.Millisecond)
	tick := time.NewTimer(interval)
	defer tick.Stop()
	for renewals := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-l.lost:
			return
		case <-tick.C:
		}
		if lc.maxRenewals > 0 && renewals >= lc.maxRenewals {
			return // capped: the lock now runs out at the end of its TTL
		}
		ttl := l.ttl
		if lc.maxHold > 0 {
			ttl = min(ttl, time.Until(l.acquiredAt.Add(lc.maxHold)))
			if ttl < time.Millisecond {
				return
			}
		}
		// A renewal must not outlive the next one's slot; a slow server then costs a
		// renew_failed, and the validity deadline decides whether the lock is lost.
		rctx, cancel := context.WithTimeout(ctx, interval)
		start := time.Now()
		validUntil, err := l.c.store.refresh(rctx, l.h, ttl)
		cancel()
		if ctx.Err() != nil {
			return // stopped by Release or lose while the renewal was in flight
		}
		if l.renewed(start, validUntil, err) == nil {
			renewals++
		} else if errors.Is(err, ErrNotHeld) {
			return
		}
		tick.Reset(interval)
	}
}
