package scanner

import (
	"context"
	"time"
)

// Watch takes a census again and again and streams what it finds. The next pass starts
// Options.Interval after a pass ends, or as long as the pass took if that is longer, so a huge
// keyspace keeps the server busy at most half the time. Batches arrive as they are read, so
// the first rows come within one SCAN round trip and one pipeline of reads, whatever the key
// count. Each pass ends with an
// UpdatePassDone for its Gen: keys not seen in that pass are gone. Between passes, locklib
// events (protocol.EventsChannel) and keyspace notifications, when the server sends them, make
// Watch re-read the one key concerned at once and send it as a one-lock UpdateBatch (Gone set
// when it was deleted). The channel closes when ctx ends; stop reading only after cancelling.
func (s *Scanner) Watch(ctx context.Context) <-chan Update {
	out := make(chan Update, 64)
	go s.watch(ctx, out)
	return out
}

func (s *Scanner) watch(ctx context.Context, out chan<- Update) {
	defer close(out)
	send := func(u Update) bool {
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	hints := s.hints(ctx, func(msg string) { send(Update{Kind: UpdateWarning, Warning: msg}) })
	warned := map[string]bool{} // one warning per problem for the whole watch, not per pass
	for gen := uint64(1); ctx.Err() == nil; gen++ {
		p := s.newPass(sink{
			batch: func(_ int, locks []Lock) error {
				if locks = compact(locks); len(locks) == 0 {
					return nil
				}
				if !send(Update{Kind: UpdateBatch, Gen: gen, Locks: locks}) {
					return ctx.Err()
				}
				return nil
			},
			warn: func(msg string) {
				// Called concurrently by the pass's readers; the pass already dedups per pass.
				send(Update{Kind: UpdateWarning, Gen: gen, Warning: msg})
			},
			retrying: func(addr string, attempt int, in time.Duration, err error) {
				send(Update{Kind: UpdateRetrying, Gen: gen, Addr: addr, Attempt: attempt, RetryIn: in, Err: err})
			},
		})
		p.suppress(warned)
		census, err := p.run(ctx)
		for _, w := range census.Warnings {
			warned[w] = true
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(Update{Kind: UpdateError, Gen: gen, Err: err, Census: census})
		} else {
			send(Update{Kind: UpdatePassDone, Gen: gen, Census: census})
		}
		if !s.waitForNextPass(ctx, max(s.opts.Interval, census.Duration), gen, hints, send) {
			return
		}
	}
}

// waitForNextPass rests for d, re-reading single keys named by hints meanwhile.
func (s *Scanner) waitForNextPass(ctx context.Context, d time.Duration, gen uint64, hints <-chan string, send func(Update) bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case key := <-hints:
			l, err := s.Get(ctx, key)
			if err != nil && !l.Gone {
				continue // the next pass will tell; a failed hint is not worth a warning
			}
			if !send(Update{Kind: UpdateBatch, Gen: gen, Locks: []Lock{l}}) {
				return false
			}
		}
	}
}
