package scanner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockscope/lockscope/connect"
)

// Census walks the whole target once and returns every lock key matching the pattern once.
//
// Reads overlap the SCAN (see walk). The result array is allocated once, from the pass's
// estimate of the key count (DBSIZE and the first SCAN page), and batches are decoded
// straight into it; batches read before it exists, or beyond the estimate, are copied in
// at the end.
//
// A server that cannot be read is named in Missing (the census is partial) and the error is
// nil, unless no server at all could be read: then the error wraps ErrUnreachable. A SCAN or
// PTTL that Redis refuses (e.g. NOPERM) is a *CommandError.
func (s *Scanner) Census(ctx context.Context) (Census, error) {
	var a assembly
	p := s.newPass(sink{buffer: a.buffer, batch: a.put, expect: a.allocate})
	if s.target.Mode != connect.Redlock {
		// Every key lives on one server: a repeat is SCAN's own (the server resized its
		// table) or a key migrating between cluster masters, rare enough to find after the
		// pass instead of keeping a set of every key during it. A Redlock pass must merge
		// the instances' keys as it goes.
		p.repeatsLater = true
		// Discovered companions are joined to their locks by key, on the first client: of
		// independent servers, that would join one server's fences to another's locks.
		if canDiscover(s.opts.Pattern) && s.target.Mode != connect.Independent {
			p.discover, p.fences, p.queues = true, map[string]struct{}{}, map[string]struct{}{}
			p.companions = companionReads{}
		}
	}
	c, err := p.run(ctx)
	c.Locks = a.result(p.claimedKeys())
	if p.repeatsLater {
		c.Locks = dropRepeats(c.Locks, s.target.Mode == connect.Independent)
	}
	if err == nil && p.discover {
		if err = p.joinCompanions(ctx, c.Locks); err != nil && !isReply(err) {
			err = fmt.Errorf("%w: reading fence and wait-queue keys: %w", ErrUnreachable, err)
		}
		c.Warnings = p.summaryWarnings()
	}
	return c, err
}

// CensusEach is a census for a consumer that handles the locks as they are read instead of
// keeping them all (`lockscope ls` writes each batch out, or keeps a compact form of it):
// each gets every batch once it is read and decoded, in the order batches complete, one call
// at a time. The locks passed are the callee's to keep. An error from each stops the census
// and is returned.
//
// Unlike Census it cannot leave the fence keys to be found by its SCAN and joined at the end:
// each batch reads its keys' fences itself (one MGET; key by key on a cluster). It reads no
// wait queues (HasWaiters stays false: unknown): measured on a million locks, asking for them
// cost the server as much as the fences, for a count a listing does not show. SCAN repeats
// are dropped as they come (see digestSet). The returned Census has no Locks; Warnings,
// Missing and the error are as Census's.
func (s *Scanner) CensusEach(ctx context.Context, each func(locks []Lock) error) (Census, error) {
	// The consumer stops the pass by cancelling it, so that its error is not taken for a
	// server that could not be read.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var repeats *digestSet // nil: the pass drops repeats itself (Redlock merges as it claims)
	if s.target.Mode != connect.Redlock {
		repeats = newDigestSet(s.target.Mode == connect.Independent)
	}
	// One goroutine hands the batches over, through a queue, so that the readers go on
	// reading while the consumer works on a batch (a table renders and sorts its rows): the
	// server, not the consumer, sets the pace, as long as the consumer keeps up overall.
	var expected atomic.Int64
	batches := make(chan []Lock, consumerQueue)
	var stopped error
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for locks := range batches {
			if stopped != nil {
				continue // drain: the readers must not block on a consumer that left
			}
			if repeats != nil {
				repeats.expect(int(expected.Load()))
				locks = repeats.dropSeen(locks)
			}
			if len(locks) > 0 {
				if stopped = each(locks); stopped != nil {
					cancel()
				}
			}
		}
	}()
	p := s.newPass(sink{
		expect: func(n int) { expected.Store(int64(n)) },
		batch: func(_ int, locks []Lock) error {
			if locks = compact(locks); len(locks) == 0 {
				return nil
			}
			select {
			case batches <- locks:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	p.companions = companionReads{fences: true}
	p.repeatsLater = repeats != nil
	c, err := p.run(ctx)
	close(batches)
	<-consumed
	if stopped != nil {
		err = stopped
	}
	return c, err
}

// consumerQueue is how many batches CensusEach keeps queued for its consumer (up to 5,000
// records each): enough to ride out a slow batch, not so many that a consumer that cannot
// keep up makes the census hold the records it was meant not to keep.
const consumerQueue = 8

// assembly collects a census: batches are decoded into the final array where it covers
// their positions, or into their own slices (read before the estimate came, or beyond it).
type assembly struct {
	mu        sync.Mutex
	final     []Lock
	overflow  []positioned
	allocated chan struct{} // closed once final is allocated; nil when no estimate came
}

type positioned struct {
	start int
	locks []Lock
}

// allocate sizes the final array from the pass's estimate. Zeroing a large array takes a
// quarter of a second and more for a million records on a busy machine, so it happens
// beside the SCAN, which goes on meanwhile and queues batches; the readers wait for the
// array (a batch decoded elsewhere would cost a copy and leave garbage; measured, waiting
// was both faster and leaner).
func (a *assembly) allocate(estimate int) {
	if estimate <= 0 {
		return
	}
	done := make(chan struct{})
	a.mu.Lock()
	a.allocated = done
	a.mu.Unlock()
	go func() {
		defer close(done)
		final := make([]Lock, estimate)
		a.mu.Lock()
		a.final = final
		a.mu.Unlock()
	}()
}

// waitAllocated returns once the final array, if one is coming, exists.
func (a *assembly) waitAllocated() {
	a.mu.Lock()
	done := a.allocated
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (a *assembly) buffer(start, n int) []Lock {
	a.waitAllocated()
	a.mu.Lock()
	defer a.mu.Unlock()
	if start+n <= len(a.final) {
		return a.final[start : start+n : start+n]
	}
	return make([]Lock, n)
}

func (a *assembly) put(start int, locks []Lock) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(locks) > 0 && (start+len(locks) > len(a.final) || &a.final[start] != &locks[0]) {
		a.overflow = append(a.overflow, positioned{start, locks})
	}
	return nil
}

// result is the census's locks (total keys were claimed), without the empty records of keys
// that vanished. An estimate that fell short costs one copy here; one that was more than
// twice too high is copied into an array of the right size, so the excess is not kept.
func (a *assembly) result(total int) []Lock {
	a.waitAllocated()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.final
	if total > len(out) || total < len(out)/2 {
		out = make([]Lock, total)
		copy(out, a.final)
	}
	out = out[:total]
	for _, b := range a.overflow {
		copy(out[b.start:], b.locks)
	}
	a.final, a.overflow = nil, nil
	return compact(out)
}
