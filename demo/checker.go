package demo

import (
	"sync"
	"time"
)

// Protection is how the protected resource tells the current lock holder from a stale one.
type Protection int

const (
	// FencingTokens: every write carries the lock's fencing token; a write whose token is
	// lower than the highest the resource has accepted is refused (Kleppmann's fence).
	FencingTokens Protection = iota
	// OwnerCompare: a critical section first claims the resource with its lock's unique value;
	// later writes are accepted only while the claim is still its own (compare-and-set on the
	// owner value, antirez's answer for Redlock, whose locks carry no safe fencing token).
	OwnerCompare
	// Unprotected: writes carry nothing the resource could check, so it accepts every one
	// (the naive lock's resource: its locks have no fencing token).
	Unprotected
)

func (p Protection) String() string {
	switch p {
	case OwnerCompare:
		return "owner-compare"
	case Unprotected:
		return "none"
	}
	return "fencing-tokens"
}

// Counters are the checker's figures: the demo's proof (overlaps, stale_accepted,
// stale_rejected) and its measurements. Unsafe owns the judgement.
type Counters struct {
	Sections          int64 `json:"sections"`            // critical sections entered
	Handoffs          int64 `json:"handoffs"`            // a resource's lock passed to another worker
	Overlaps          int64 `json:"overlaps"`            // sections whose accepted writes interleaved: unsafe
	StaleAccepted     int64 `json:"stale_accepted"`      // writes of an expired holder the resource accepted: unsafe
	StaleRejected     int64 `json:"stale_rejected"`      // late writes the resource refused
	NoTTLLocks        int64 `json:"no_ttl_locks"`        // lock keys found in Redis with no TTL: held forever
	ExpiredAfterCrash int64 `json:"expired_after_crash"` // a crashed holder's lock expired and was taken over
	LostSections      int64 `json:"lost_sections"`       // sections given up because the lock was lost first
	ObtainErrors      int64 `json:"obtain_errors"`       // Obtain calls that failed or timed out
	Crashes           int64 `json:"crashes"`             // workers crashed (by the scenario or by hand)
	Pauses            int64 `json:"pauses"`              // workers frozen
	Failovers         int64 `json:"failovers"`           // instances stopped and restarted empty, or masters killed
	// OverlappingHolders are sections that wrote (accepted or refused) after their lock had
	// been given to another worker: two holders acting at once. Fencing makes it harmless.
	OverlappingHolders int64 `json:"overlapping_holders"`
	LocksLost          int64 `json:"locks_lost"`        // locks held on a killed master that its promoted replica did not have
	Promotions         int64 `json:"promotions"`        // replicas promoted to master (failover-replica)
	TokenJumps         int64 `json:"token_jumps"`       // first tokens after a promotion whose counter the new master had lost: the clock floor's
	TokenRegressions   int64 `json:"token_regressions"` // first tokens after a promotion not above the last one before: must be 0
	// rw-pool: leases Redis let overlap, judged from their valid intervals (grant to release
	// or confirmed deadline): a writer's with another lease on the document, or more permits
	// than the semaphore has. Unsafe.
	LeaseViolations int64 `json:"lease_violations"`
	LeasesLost      int64 `json:"leases_lost"` // rw-pool: leases that ran out before their holder released them (crashes, pauses)
	MaxReaders      int64 `json:"max_readers"` // rw-pool: the most read leases valid at one instant
	MaxPermits      int64 `json:"max_permits"` // rw-pool: the most permits in use at the pool at one instant (at most the permits)
}

// Unsafe says whether the protected resource failed to protect: two critical sections
// interleaved on it, or it accepted a write of a holder whose lock had already gone to a
// newer holder who wrote, or a fencing token after a promotion was not above the last one
// before (locklib's promise broken), or Redis let conflicting leases be valid at once. A lock
// left without a TTL is a liveness failure, not a safety one; an overlapping holder whose
// writes fencing refused is the lesson, not a failure.
func (k Counters) Unsafe() bool {
	return k.Overlaps > 0 || k.StaleAccepted > 0 || k.TokenRegressions > 0 || k.LeaseViolations > 0
}

// section is one critical section: from Obtain returning to Release.
type section struct {
	id       uint64
	resource string
	worker   int
	token    int64  // fencing token (FencingTokens)
	owner    string // the lock's value (OwnerCompare)
	phase    Scenario

	superseded  bool // another section's write was accepted after this one's last accepted write
	overlapped  bool // counted as an overlap already
	overlapping bool // counted as an overlapping holder already
}

// resourceState is the protected resource itself: what it accepted, and what the checker
// needs to judge the next write.
type resourceState struct {
	highest    int64    // highest fencing token accepted
	claim      string   // OwnerCompare: owner value of the last claim
	lastWriter *section // the section of the last accepted write
	newest     *section // the latest-entered section with an accepted write
	lastHolder int      // worker of the last section entered, for hand-offs
	lastOwner  string   // the lock value of the last section entered: the only one of this run the key can still hold after Stop
	lastOpened uint64   // id of the last section entered
	accepted   int64    // writes accepted
	crashed    *crashRecord
}

// crashRecord is a holder that crashed: its lock must expire before anyone else gets in.
type crashRecord struct {
	phase Scenario // the phase the crash happened in
}

// phaseStats is what one phase of the run measured.
type phaseStats struct {
	counters Counters
	wait     histogram
}

// checker is the protected resources and the judge of every write to them. Safe for
// concurrent use; everything it counts is per phase and in total.
type checker struct {
	protection Protection

	mu        sync.Mutex
	nextID    uint64
	resources map[string]*resourceState
	phases    map[Scenario]*phaseStats
	total     phaseStats
	// afterPromotion: per resource, the promotion waiting for its first token (failover-replica)
	afterPromotion map[string]*PromotedResource
	promotions     []*Promotion
}

func newChecker(p Protection) *checker {
	return &checker{protection: p, resources: map[string]*resourceState{}, phases: map[Scenario]*phaseStats{},
		afterPromotion: map[string]*PromotedResource{}}
}

func (c *checker) resource(name string) *resourceState {
	rs := c.resources[name]
	if rs == nil {
		rs = &resourceState{}
		c.resources[name] = rs
	}
	return rs
}

// count applies f to the counters of phase and of the whole run. Call with c.mu held.
func (c *checker) count(phase Scenario, f func(*Counters)) {
	ps := c.phases[phase]
	if ps == nil {
		ps = &phaseStats{}
		c.phases[phase] = ps
	}
	f(&ps.counters)
	f(&c.total.counters)
}

// open records a worker entering a critical section on resource after waiting wait.
func (c *checker) open(resource string, worker int, token int64, owner string, phase Scenario, wait time.Duration) *section {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	s := &section{id: c.nextID, resource: resource, worker: worker, token: token, owner: owner, phase: phase}
	rs := c.resource(resource)
	handoff := rs.lastHolder != 0 && rs.lastHolder != worker
	rs.lastHolder, rs.lastOwner, rs.lastOpened = worker, owner, s.id
	c.firstTokenLocked(s)
	c.enteredLocked(phase, wait)
	if handoff {
		c.count(phase, func(k *Counters) { k.Handoffs++ })
	}
	if cr := rs.crashed; cr != nil {
		// The crashed holder never released: this section could only start once its lock expired.
		rs.crashed = nil
		c.count(cr.phase, func(k *Counters) { k.ExpiredAfterCrash++ })
	}
	return s
}

// entered counts a critical section entered in phase after waiting wait.
func (c *checker) entered(phase Scenario, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enteredLocked(phase, wait)
}

func (c *checker) enteredLocked(phase Scenario, wait time.Duration) {
	c.count(phase, func(k *Counters) { k.Sections++ })
	c.phases[phase].wait.record(wait)
	c.total.wait.record(wait)
}

// lastOwner is the lock value of the last section entered on resource ("" for none).
func (c *checker) lastOwner(resource string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resource(resource).lastOwner
}

// setOwner records value as the last one this run's workers set on resource (the naive lock's
// SETNX, before any section opens: a crash may follow before it does).
func (c *checker) setOwner(resource, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resource(resource).lastOwner = value
}

// claim is a section's first write. Under OwnerCompare it makes the section the resource's
// owner; under FencingTokens it is an ordinary write.
func (c *checker) claim(s *section) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.resource(s.resource)
	if c.protection == OwnerCompare {
		rs.claim = s.owner
	}
	return c.writeLocked(rs, s)
}

// write is a later write of section s: accepted or refused as stale.
func (c *checker) write(s *section) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeLocked(c.resource(s.resource), s)
}

func (c *checker) writeLocked(rs *resourceState, s *section) bool {
	if rs.lastOpened > s.id && !s.overlapping {
		s.overlapping = true
		c.count(s.phase, func(k *Counters) { k.OverlappingHolders++ })
	}
	stale := false
	switch c.protection {
	case FencingTokens:
		stale = s.token < rs.highest
	case OwnerCompare:
		stale = rs.claim != s.owner
	}
	if stale {
		c.count(s.phase, func(k *Counters) { k.StaleRejected++ })
		return false
	}
	rs.highest = max(rs.highest, s.token)
	rs.accepted++
	if rs.newest != nil && rs.newest.id > s.id {
		// A section that entered after s has written: s's lock had gone to it, yet the
		// resource took s's write. Fencing exists to refuse exactly this write.
		c.count(s.phase, func(k *Counters) { k.StaleAccepted++ })
	} else {
		rs.newest = s
	}
	if rs.lastWriter != nil && rs.lastWriter != s {
		rs.lastWriter.superseded = true
	}
	if s.superseded && !s.overlapped {
		// s wrote, another section wrote, and now s writes again, all accepted: the two
		// critical sections interleaved on this resource. Mutual exclusion failed.
		s.overlapped = true
		c.count(s.phase, func(k *Counters) { k.Overlaps++ })
	}
	rs.lastWriter = s
	return true
}

// overtaken reports whether a later section has written to s's resource: the lock of s went
// to someone else, who already acted as its holder.
func (c *checker) overtaken(s *section) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.resource(s.resource).lastWriter
	return last != nil && last.id > s.id
}

// crashed records that the holder of s crashed without releasing, during phase.
func (c *checker) crashed(s *section, phase Scenario) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resource(s.resource).crashed = &crashRecord{phase: phase}
}

// note counts an event that is not a write (faults, lost sections, obtain errors).
func (c *checker) note(phase Scenario, f func(*Counters)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count(phase, f)
}

// totals is the whole run's counters and wait histogram.
func (c *checker) totals() (Counters, histogram) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total.counters, c.total.wait
}

// phase is one phase's counters and wait histogram (zero when the phase has not run).
func (c *checker) phase(p Scenario) (Counters, histogram) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.phases[p]; ps != nil {
		return ps.counters, ps.wait
	}
	return Counters{}, histogram{}
}
