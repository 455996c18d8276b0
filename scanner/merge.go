package scanner

import (
	"context"
	"sort"
	"sync"
	"time"
)

// keyReaders are one reading goroutine's keyReader for each server it reads (same order).
type keyReaders []*keyReader

func newReaders(servers []server) keyReaders {
	rs := make(keyReaders, len(servers))
	for i, srv := range servers {
		rs[i] = newKeyReader(srv.rdb)
	}
	return rs
}

// readLocks reads keys on every reader and builds their Lock records into dst (one per key,
// len(dst) == len(keys)); kr are the calling goroutine's keyReaders for readers. A key gone
// everywhere leaves its record empty (Key ""): compact drops those. With one reader a failure
// is returned (the caller retries or marks the server missing); with several (Redlock) a
// failed instance is marked missing and the rest still count.
func (s *Scanner) readLocks(ctx context.Context, keys []string, readers []server, kr keyReaders, p *pass, dst []Lock) error {
	fetched := time.Now()
	reads := make([][]instRead, len(readers))
	read := func(j int) error {
		return p.retry(ctx, readers[j].addr, func() error {
			r, err := kr[j].readKeys(ctx, readers[j].rdb, keys, s.opts.HashCap, p.companions, &p.denied, p.out.warn)
			reads[j] = r
			return err
		})
	}
	if len(readers) == 1 {
		if err := read(0); err != nil {
			return err
		}
		singleLocks(keys, reads[0], readers[0].addr, fetched, dst)
		return p.retry(ctx, readers[0].addr, func() error {
			return readRedisson(ctx, readers[0].rdb, dst, p.readsWaiters(), s.opts.HashCap)
		})
	}
	var wg sync.WaitGroup
	for j := range readers {
		if p.isMissing(readers[j].addr) {
			continue // already failed in this pass: do not wait for its retries again
		}
		wg.Go(func() {
			if err := read(j); err != nil && ctx.Err() == nil {
				reads[j] = nil
				p.markMissing(readers[j].addr, err)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	quorumLocks(keys, reads, readers, fetched, dst)
	return nil
}

// compact drops the empty records of keys that vanished, in place.
func compact(locks []Lock) []Lock {
	kept := locks[:0]
	for i := range locks {
		if locks[i].Key != "" {
			kept = append(kept, locks[i])
		}
	}
	clear(locks[len(kept):]) // let the collector have what the dropped tail pointed to
	return kept
}

// singleLocks builds the records of a standalone server or a cluster master.
func singleLocks(keys []string, reads []instRead, addr string, fetched time.Time, dst []Lock) {
	for i := range keys {
		r := &reads[i]
		if !r.present {
			dst[i] = Lock{}
			continue
		}
		l := &dst[i]
		*l = Lock{Key: keys[i], Addr: addr, FetchedAt: fetched, Value: r.value, Truncated: r.truncated}
		l.Fence, l.HasFence, l.Waiters, l.HasWaiters = r.fence, r.hasFence, r.waiters, r.hasWaiters
		l.TTL, l.NoExpiry = ttlOf(r.pttl)
		decodeValue(l, r) // after the TTL: some layouts are told by it (redissonSemaphore)
		forgetForeignWaiters(l)
	}
}

// forgetForeignWaiters makes a lock's waiters unknown unless they were counted where its
// library queues them: locklib's wait queue counts only locklib's waiters (Redisson's are
// read apart, readRedisson), and redsync, bsm/redislock and node-redlock waiters poll,
// which leaves no trace to count. Unknown is not 0: nobody can say that nobody waits.
func forgetForeignWaiters(l *Lock) {
	if l.Format != FormatLockscope {
		l.Waiters, l.HasWaiters = 0, false
	}
}

// quorumLocks merges N Redlock instances: the Lock shows the value most instances agree on.
func quorumLocks(keys []string, reads [][]instRead, readers []server, fetched time.Time, dst []Lock) {
	n := len(readers)
	for i := range keys {
		dst[i] = Lock{}
		insts := make([]Instance, n)
		best, agree := -1, 0
		for j := range readers {
			if reads[j] == nil {
				insts[j] = Instance{Addr: readers[j].addr, Missing: true}
				continue
			}
			r := &reads[j][i]
			insts[j] = instanceOf(readers[j].addr, r)
			if !r.present {
				continue
			}
			if best >= 0 && reads[best][i].value == r.value {
				continue // already counted with the current best
			}
			if total := countAgree(reads, i, r.value); total > agree { // ties: the first instance wins
				best, agree = j, total
			}
		}
		if best < 0 {
			continue // gone on every instance
		}
		r := &reads[best][i]
		l := &dst[i]
		*l = Lock{Key: keys[i], FetchedAt: fetched, Value: r.value, Truncated: r.truncated}
		q := &Quorum{Instances: insts, Agree: agree, Needed: n/2 + 1, Total: n}
		q.Reached = q.Agree >= q.Needed
		l.Quorum = q
		l.TTL, l.NoExpiry = quorumTTL(reads, i, r.value, q)
		decodeValue(l, r) // after the TTL: some layouts are told by it (redissonSemaphore)
		for j := range reads {
			if reads[j] == nil || !reads[j][i].present {
				continue
			}
			o := &reads[j][i]
			if o.hasFence && (!l.HasFence || o.fence > l.Fence) {
				l.Fence, l.HasFence = o.fence, true
			}
			if o.hasWaiters && (!l.HasWaiters || o.waiters > l.Waiters) {
				l.Waiters, l.HasWaiters = o.waiters, true
			}
		}
		forgetForeignWaiters(l)
	}
}

func countAgree(reads [][]instRead, i int, value string) int {
	n := 0
	for j := range reads {
		if reads[j] != nil && reads[j][i].present && reads[j][i].value == value {
			n++
		}
	}
	return n
}

// quorumTTL is how long the agreeing instances keep a quorum: the Needed-th longest TTL
// among them. Without a quorum it is the longest any of them keeps the value.
func quorumTTL(reads [][]instRead, i int, value string, q *Quorum) (time.Duration, bool) {
	const forever = time.Duration(1<<63 - 1)
	var ttls []time.Duration
	for j := range reads {
		if reads[j] == nil || !reads[j][i].present || reads[j][i].value != value {
			continue
		}
		t, noExpiry := ttlOf(reads[j][i].pttl)
		if noExpiry {
			t = forever
		}
		ttls = append(ttls, t)
	}
	sort.Slice(ttls, func(a, b int) bool { return ttls[a] > ttls[b] })
	t := ttls[0]
	if q.Reached {
		t = ttls[q.Needed-1]
	}
	if t == forever {
		return 0, true
	}
	return t, false
}

func ttlOf(pttl time.Duration) (ttl time.Duration, noExpiry bool) {
	if pttl == -1 {
		return 0, true
	}
	return max(pttl, 0), false
}

func instanceOf(addr string, r *instRead) Instance {
	in := Instance{Addr: addr, Present: r.present}
	if r.present {
		in.Value, in.Truncated = r.value, r.truncated
		in.TTL, in.NoExpiry = ttlOf(r.pttl)
	}
	return in
}
