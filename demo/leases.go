package demo

import (
	"slices"
	"sync"
	"time"
)

// The rw-pool scenario's resources and its checker: a document behind a read-write lock and a
// pool behind a lease semaphore, and the history of every lease, from which the checker
// judges the scenario's invariants.

// leaseMode is what a lease grants: a read or a write level of the document's read-write
// lock, or one permit of the pool's lease semaphore.
type leaseMode string

const (
	modeRead   leaseMode = "read"
	modeWrite  leaseMode = "write"
	modePermit leaseMode = "permit"
)

// conflict says whether two leases may not be held at once: on the document, unless both
// read. Permits never conflict two by two: the pool's bound is a count.
func conflict(a, b leaseMode) bool {
	return a != modePermit && b != modePermit && (a == modeWrite || b == modeWrite)
}

// document is the read-mostly resource behind the read-write lock. Every operation carries
// the lease's fencing token: a write grant's token is fresh (above every token before); a
// read grant's is the fence counter when it was granted, that is the token of the last write
// grant. So the tokens order conflicting grants: a reader with token c came after every
// writer with a token up to c, and before every writer with a higher one. The document keeps
// the highest write token it accepted (its version) and the highest read token it served,
// and refuses
//   - a write whose token is below its version (a newer writer has written), or at or below
//     a read token served (a reader granted after this writer's lease ended has read);
//   - a read whose token is below its version (a writer granted after this reader's lease
//     ended has written).
//
// (A holder that downgrades write to read would present a read token equal to its own write
// token; the demo's workers never downgrade.)
type document struct {
	version   int64 // the token of the last write accepted
	readFloor int64 // the highest read token served
}

func (d *document) write(token int64) bool {
	if token < d.version || token <= d.readFloor {
		return false
	}
	d.version = token
	return true
}

func (d *document) read(token int64) bool {
	if token < d.version {
		return false
	}
	d.readFloor = max(d.readFloor, token)
	return true
}

// pool is the resource behind the lease semaphore: N slots, used by holders of permits. A
// permit is valid only until its lease's deadline in Redis, after which the semaphore may
// give it to another; so each use presents the permit's token and the deadline Redis last
// confirmed to the holder (measured from before asking: never later than Redis' own). The
// pool keeps each token's latest deadline, and refuses a use at or after the deadline
// presented, and any use of a token whose deadline it saw pass: that permit is stale, its
// slot may be someone else's now, even if its holder comes back with a later deadline.
type pool struct {
	deadlines map[int64]time.Time // token -> the latest deadline presented
	stale     map[int64]bool      // tokens whose deadline the pool saw pass
}

func newPool() *pool { return &pool{deadlines: map[int64]time.Time{}, stale: map[int64]bool{}} }

func (p *pool) use(token int64, deadline, now time.Time) bool {
	if known, ok := p.deadlines[token]; ok && !now.Before(known) {
		p.stale[token] = true
	}
	if p.stale[token] || !now.Before(deadline) {
		p.stale[token] = true
		delete(p.deadlines, token)
		return false
	}
	p.deadlines[token] = deadline
	return true
}

// done is a holder returning its slot (its section ended): its token is no user any more.
func (p *pool) done(token int64) {
	delete(p.deadlines, token)
	delete(p.stale, token)
}

// inUse is the number of slots held now: tokens whose deadline has not passed.
func (p *pool) inUse(now time.Time) int {
	n := 0
	for _, d := range p.deadlines {
		if now.Before(d) {
			n++
		}
	}
	return n
}

// leaseEnd is how a lease ended.
type leaseEnd int

const (
	leaseHeld     leaseEnd = iota // not yet ended
	leaseReleased                 // its holder released it in time
	leaseLost                     // it ran out before its holder released it (a pause, a loss)
	leaseCrashed                  // its holder crashed: it stays in Redis until its deadline
)

// lease is one grant as the checker records it: who, what, its token, when it was granted,
// the deadline Redis last confirmed for it, how and when it ended, and the span of the
// operations the resource accepted from it.
type lease struct {
	id     uint64 // grant order, as the workers saw their grants
	worker int
	mode   leaseMode
	token  int64
	value  string // the lock value it was granted with
	phase  Scenario

	granted time.Time // when Obtain or Acquire returned: at or after the grant in Redis
	// deadline is the latest deadline of the lease in Redis confirmed to its holder (the time
	// before asking plus the remaining time Redis answered: never later than Redis' own);
	// zero until the first confirmation.
	deadline time.Time
	ended    time.Time // when its holder released it, learned it lost, or crashed
	end      leaseEnd

	firstOK, lastOK time.Time // the first and last operation the resource accepted (zero: none)

	late, overlapped, violated, crashCounted bool // counted once each
}

// valid is the interval the lease surely held in Redis: from its grant until its release or
// loss or its confirmed deadline, whichever came first (a crashed holder's lease stays until
// the deadline); ok is false when no deadline was ever confirmed.
func (l *lease) valid() (from, to time.Time, ok bool) {
	if l.deadline.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	to = l.deadline
	if l.end != leaseCrashed && !l.ended.IsZero() && l.ended.Before(to) {
		to = l.ended
	}
	return l.granted, to, l.granted.Before(to)
}

// effective is the span of the lease's accepted operations, as a half-open interval; ok is
// false when the resource accepted none.
func (l *lease) effective() (from, to time.Time, ok bool) {
	if l.firstOK.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	return l.firstOK, l.lastOK.Add(time.Nanosecond), true
}

// leaseChecker owns the rw-pool scenario's document and pool, and judges every operation on
// them against the history of leases. Its invariants:
//
//	(a) on the document, the accepted operations of two conflicting leases (a writer and a
//	    reader, or two writers) never interleave, and come in the order of their grants: an
//	    operation accepted after one of a conflicting lease granted later is a stale write (or
//	    read) accepted, and the pair an overlap;
//	(b) at no instant are more than N permits in use at the pool (the span of each lease's
//	    accepted uses): more is an overlap;
//	(c) no stale operation is accepted: on the document (a) says which; at the pool, a use at
//	    or after the lease's confirmed deadline.
//
// From the leases' valid intervals (grant to release or confirmed deadline) it also checks
// Redis itself: never a writer's lease valid together with another lease on the document,
// never more than N permits valid at once (lease_violations). A lease that acted after its
// lock went to another (a conflicting lease granted later, or its own deadline passed) is
// an overlapping holder: the lesson, harmless when every such operation was refused.
//
// Safe for concurrent use; operations are judged in the order they reach the resource.
type leaseChecker struct {
	k       *checker // the run's counters, per phase
	permits int

	mu     sync.Mutex
	doc    document
	pool   *pool
	nextID uint64
	leases []*lease // granted, less those no later check can involve (prune)
	// crashedValues are the lock values of the leases whose holders crashed (leftBehind).
	crashedValues []any
	lastDoc       *lease // the last lease granted on the document, for hand-offs
}

func newLeaseChecker(k *checker, permits int) *leaseChecker {
	return &leaseChecker{k: k, permits: permits, pool: newPool()}
}

// grant records a lease granted at at, after waiting wait.
func (c *leaseChecker) grant(worker int, mode leaseMode, token int64, value string, phase Scenario, wait time.Duration, at time.Time) *lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	l := &lease{id: c.nextID, worker: worker, mode: mode, token: token, value: value, phase: phase, granted: at}
	c.k.entered(phase, wait)
	if mode != modePermit {
		// The document passed to another worker, from a writer or to one.
		if last := c.lastDoc; last != nil && last.worker != worker && conflict(last.mode, mode) {
			c.k.note(phase, func(k *Counters) { k.Handoffs++ })
		}
		c.lastDoc = l
	}
	c.countTakeOverLocked(l)
	c.leases = append(c.leases, l)
	return l
}

// countTakeOverLocked counts a grant that had to wait for a crashed holder's lease to run out:
// on the document, any grant in conflict with it; at the pool, a grant while the crashed
// permits and the others valid fill every permit.
func (c *leaseChecker) countTakeOverLocked(l *lease) {
	var crashed []*lease // crashed holders' leases since run out
	valid := 0           // permits held by others, crashed or not, still valid
	for _, m := range c.leases {
		expired := !l.granted.Before(m.deadline)
		switch {
		case m.end == leaseCrashed && !m.crashCounted && expired && (conflict(m.mode, l.mode) || m.mode == modePermit && l.mode == modePermit):
			crashed = append(crashed, m)
		case m.mode == modePermit && (m.end == leaseHeld || m.end == leaseCrashed) && !expired:
			valid++
		}
	}
	if len(crashed) == 0 || l.mode == modePermit && valid+len(crashed) < c.permits {
		return
	}
	m := crashed[0]
	m.crashCounted = true
	c.k.note(m.phase, func(k *Counters) { k.ExpiredAfterCrash++ })
}

// confirm records that Redis confirmed, before at, that l's lease lasts until deadline.
func (c *leaseChecker) confirm(l *lease, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if deadline.After(l.deadline) {
		l.deadline = deadline
	}
}

// act is the operation of l's holder at at on its resource: a read or a write of the
// document, or a use of the pool presenting the lease's confirmed deadline. It reports
// whether the resource accepted it.
func (c *leaseChecker) act(l *lease, at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ok bool
	switch l.mode {
	case modeRead:
		ok = c.doc.read(l.token)
	case modeWrite:
		ok = c.doc.write(l.token)
	case modePermit:
		ok = c.pool.use(l.token, l.deadline, at)
	}
	c.recordLocked(l, at, ok)
	return ok
}

// recordLocked judges an operation of l at at that the resource accepted (ok) or refused.
func (c *leaseChecker) recordLocked(l *lease, at time.Time, ok bool) {
	if !l.late && c.lateLocked(l, at) {
		l.late = true
		c.k.note(l.phase, func(k *Counters) { k.OverlappingHolders++ })
	}
	if !ok {
		c.k.note(l.phase, func(k *Counters) { k.StaleRejected++ })
		return
	}
	if l.firstOK.IsZero() {
		l.firstOK = at
	}
	l.lastOK = at
	var stale, overlap bool
	var peak int
	if l.mode == modePermit {
		stale = !at.Before(l.deadline)
		from, to, _ := l.effective()
		peak = coverage(c.leases, modePermit, (*lease).effective, from, to)
		overlap = peak > c.permits
	} else {
		// A conflicting lease granted after l has an operation accepted already: l's comes
		// after it, out of the grants' order.
		for _, m := range c.leases {
			if m.id > l.id && conflict(m.mode, l.mode) && !m.firstOK.IsZero() {
				stale, overlap = true, true
				break
			}
		}
	}
	overlap = overlap && !l.overlapped
	l.overlapped = l.overlapped || overlap
	c.k.note(l.phase, func(k *Counters) {
		if stale {
			k.StaleAccepted++
		}
		if overlap {
			k.Overlaps++
		}
		k.MaxPermits = max(k.MaxPermits, int64(peak))
	})
}

// lateLocked says whether l acts after its lock went to another: a conflicting lease was
// granted after it, or (a permit) its confirmed deadline has passed.
func (c *leaseChecker) lateLocked(l *lease, at time.Time) bool {
	if l.mode == modePermit {
		return !at.Before(l.deadline)
	}
	for _, m := range c.leases {
		if m.id > l.id && conflict(m.mode, l.mode) {
			return true
		}
	}
	return false
}

// end records that l ended at at, and checks its valid interval against the other leases
// that ended: Redis must never have let a writer hold with another lease on the document,
// nor more than N permits at once. Each pair is judged once, when the later of the two ends.
func (c *leaseChecker) end(l *lease, at time.Time, how leaseEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.ended, l.end = at, how
	if how == leaseCrashed {
		c.crashedValues = append(c.crashedValues, l.value)
	}
	if l.mode == modePermit {
		c.pool.done(l.token)
	}
	from, to, ok := l.valid()
	violated, peak := false, 0
	switch {
	case !ok:
	case l.mode == modeWrite || l.mode == modeRead:
		for _, m := range c.leases {
			if m == l || m.end == leaseHeld || !conflict(m.mode, l.mode) {
				continue
			}
			if mf, mt, ok := m.valid(); ok && mf.Before(to) && from.Before(mt) {
				violated = true
			}
		}
		if l.mode == modeRead {
			peak = coverage(c.leases, modeRead, endedValid, from, to)
		}
	case l.mode == modePermit:
		violated = coverage(c.leases, modePermit, endedValid, from, to) > c.permits
	}
	violated = violated && !l.violated
	l.violated = l.violated || violated
	c.k.note(l.phase, func(k *Counters) {
		if how == leaseLost || how == leaseCrashed {
			k.LeasesLost++
		}
		if violated {
			k.LeaseViolations++
		}
		k.MaxReaders = max(k.MaxReaders, int64(peak))
	})
	c.pruneLocked(at)
}

// pruneSlack is how long before the oldest held lease's grant (or now) an ended lease is kept.
const pruneSlack = 10 * time.Second

// endedValid is the valid interval of a lease that ended (a held one's may still grow: it is
// judged when it ends).
func endedValid(l *lease) (from, to time.Time, ok bool) {
	if l.end == leaseHeld {
		return time.Time{}, time.Time{}, false
	}
	return l.valid()
}

// coverage is the most intervals (of the leases in mode, as span gives them, half-open) that
// cover one instant in [from, to).
func coverage(leases []*lease, mode leaseMode, span func(*lease) (time.Time, time.Time, bool), from, to time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, l := range leases {
		if l.mode != mode {
			continue
		}
		s, e, ok := span(l)
		if !ok || !s.Before(to) || !from.Before(e) {
			continue
		}
		edges = append(edges, edge{s, 1}, edge{e, -1})
	}
	// Ends before starts at one instant: the intervals are half-open.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// pruneLocked forgets the leases no later check can involve: those that ended, valid and
// accepted operations included, before every lease still held was granted (every later
// check concerns a held lease's intervals, which start at its grant, or a lease granted
// after it), with pruneSlack to spare for a grant timed before an end but recorded after
// it. A crashed lease stays until a grant has taken it over (countTakeOverLocked).
func (c *leaseChecker) pruneLocked(now time.Time) {
	horizon := now.Add(-pruneSlack)
	for _, l := range c.leases {
		if l.end == leaseHeld && l.granted.Before(horizon) {
			horizon = l.granted
		}
	}
	c.leases = slices.DeleteFunc(c.leases, func(l *lease) bool {
		if l.end == leaseHeld || l.end == leaseCrashed && !l.crashCounted {
			return false
		}
		last := l.ended
		if _, to, ok := l.valid(); ok && to.After(last) {
			last = to
		}
		return !last.After(horizon)
	})
}

// overtaken says whether l's holder, frozen, would now act late: on the document, a
// conflicting lease granted after it has acted; at the pool, its deadline has passed and
// another permit was granted since.
func (c *leaseChecker) overtaken(l *lease, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.leases {
		switch {
		case l.mode == modePermit:
			if m.mode == modePermit && !l.deadline.IsZero() && !now.Before(l.deadline) && m.granted.After(l.deadline) {
				return true
			}
		case m.id > l.id && conflict(m.mode, l.mode) && !m.firstOK.IsZero():
			return true
		}
	}
	return false
}

// poolInUse is the number of the pool's slots in use at now.
func (c *leaseChecker) poolInUse(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pool.inUse(now)
}

// leftBehind are the lock values of the leases whose holders crashed: what the run may have
// left in Redis (every other lease was released or ran out).
func (c *leaseChecker) leftBehind() []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]any(nil), c.crashedValues...)
}
