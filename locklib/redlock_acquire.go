package locklib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// acquireOutcome is what one instance did with an acquire call.
type acquireOutcome int

const (
	acquireRefused acquireOutcome = iota // answered: someone else holds the key there
	acquireTaken                         // answered: our value is stored there
	acquireUnknown                       // error or no answer: our value may or may not be there
)

// acquireReply is one instance's answer to an acquire call.
type acquireReply struct {
	index     int
	outcome   acquireOutcome
	stored    string        // the value stored when taken
	holderTTL time.Duration // when refused and known: the holder's remaining TTL there
	err       error
}

// redlockAttempt is one acquisition attempt's instance calls. A plain attempt is decided as
// soon as a quorum took the key, or when it has failed, timed out or been cancelled; answers
// arriving after that are handled by deliver, so that a key set on an instance after the lock
// was given up (failed attempt, or released already) is deleted again rather than left to
// block that instance until its TTL.
type redlockAttempt struct {
	store     *redlockStore
	key       string
	value     string // the value to store: for a re-entrant lock it ends in ':1'
	rand      string // a re-entrant owner's protocol.Value.Rand ('' for a plain lock)
	op        string // the level it records for a re-entrant lock: the Obtain's op and the attempt
	reentrant bool
	replies   chan acquireReply // buffered for every instance: deliver never blocks

	mu          sync.Mutex
	decided     bool
	givenUp     bool   // the lock is not (or no longer) held: late keys must go
	outstanding int    // instance calls not answered yet
	answered    []bool // by instance
	registered  bool   // listed in store.pending, so that release can mark it given up
}

// acquire makes one Redlock attempt: SET NX PX (or the re-entrant script) on every instance in
// parallel, success with a quorum of them within the validity start + ttl - drift.
func (s *redlockStore) acquire(ctx context.Context, req acquireRequest) (acquireResult, error) {
	start := req.start
	if start.IsZero() {
		start = time.Now()
	}
	if err := validate(req.key, req.ttl); err != nil {
		return acquireResult{}, err
	}
	validUntil, err := s.validity(req.key, start, req.ttl)
	if err != nil {
		return acquireResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return acquireResult{}, err
	}
	// Every attempt is told from the others: a failed attempt's late answer undoes what it
	// set, which must never be what a later attempt of the same Obtain holds. A plain
	// attempt gets its own random part (owner-checked compare-and-delete compares values); a
	// re-entrant owner keeps its Rand, and each attempt records its own level.
	v := req.value
	v.Count = 0
	attempt := protocol.NewValue(v.Node, v.Trace, v.AcquiredAt).Rand
	level := req.op
	if req.reentrant {
		v.Count = 1
		level = req.op + "." + attempt
	} else {
		v.Rand = attempt
	}
	a := &redlockAttempt{
		store:       s,
		key:         req.key,
		value:       v.String(),
		op:          level,
		reentrant:   req.reentrant,
		replies:     make(chan acquireReply, len(s.clients)),
		outstanding: len(s.clients),
		answered:    make([]bool, len(s.clients)),
	}
	if req.reentrant {
		a.rand = req.value.Rand
	}
	timeout := s.instanceTimeout(req.ttl)
	callCtx, callDone := callContext(ctx, timeout, len(s.clients))
	for i := range s.clients {
		s.spawn(func() {
			r := s.acquireOn(callCtx, a, i, req.ttl)
			callDone()
			s.health.note(i, r.err)
			a.deliver(r)
		})
	}
	got, ctxErr := a.collect(ctx, timeout)
	got, held := a.decide(got, func(got []acquireReply) bool {
		return ctxErr == nil && countOutcome(got, acquireTaken) >= s.quorum && time.Now().Before(validUntil)
	})
	if held {
		res := a.obtained(got, validUntil)
		s.publish(protocol.Event{Type: string(EventAcquired), Key: req.key, Value: res.value, Node: req.value.Node,
			Trace: req.value.Trace, TTLMs: req.ttl.Milliseconds(), WaitMs: req.waited.Milliseconds()})
		return res, nil
	}
	s.undo(a, got)
	if ctxErr != nil {
		return acquireResult{}, ctxErr
	}
	res, err := s.notObtained(req.key, got, timeout)
	if err == nil && req.wake != nil && s.events {
		if first, waiters := s.wake.startsWaiting(req.key, req.wake); first {
			s.publish(protocol.Event{Type: string(EventWaiting), Key: req.key, Node: req.value.Node, Trace: req.value.Trace, Waiters: int64(waiters)})
		}
	}
	return res, err
}

// acquireOn sends the attempt to instance i.
func (s *redlockStore) acquireOn(ctx context.Context, a *redlockAttempt, i int, ttl time.Duration) acquireReply {
	if !a.reentrant {
		return s.acquirePlainOn(ctx, a, i, ttl)
	}
	keys := []string{a.key, protocol.LevelsKey(a.key), protocol.EndedKey(a.key)}
	res, err := scriptRedlockReentrant.Run(ctx, s.clients[i], keys, a.value, ttl.Milliseconds(), a.rand, a.op).Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("unexpected acquire script reply %v", res)
	}
	if err != nil {
		return acquireReply{index: i, outcome: acquireUnknown, err: fmt.Errorf("%s: %w", s.instanceName(i), err)}
	}
	if taken, _ := res[0].(int64); taken != 1 {
		pttl, _ := res[1].(int64)
		r := acquireReply{index: i, outcome: acquireRefused, holderTTL: time.Duration(pttl) * time.Millisecond}
		if pttl < 0 {
			r.holderTTL = -1 // no expiry
		}
		return r
	}
	r := acquireReply{index: i, outcome: acquireTaken}
	r.stored, _ = res[1].(string)
	return r
}

// acquirePlainOn takes a plain lock on instance i: SET NX PX, with GET and PTTL in the same
// round trip. Native commands rather than a script: on a busy server a script call costs
// about ten times a SET. GET finds our own value when go-redis sent the pipeline again after
// a lost reply and the first copy's SET took the key: taken, not refused.
func (s *redlockStore) acquirePlainOn(ctx context.Context, a *redlockAttempt, i int, ttl time.Duration) acquireReply {
	pipe := s.clients[i].Pipeline()
	set := pipe.SetArgs(ctx, a.key, a.value, redis.SetArgs{Mode: "NX", TTL: ttl})
	get := pipe.Get(ctx, a.key)
	pttl := pipe.PTTL(ctx, a.key)
	_, _ = pipe.Exec(ctx)
	switch err := set.Err(); {
	case err == nil, errors.Is(err, redis.Nil) && get.Val() == a.value:
		return acquireReply{index: i, outcome: acquireTaken, stored: a.value}
	case !errors.Is(err, redis.Nil):
		return acquireReply{index: i, outcome: acquireUnknown, err: fmt.Errorf("%s: %w", s.instanceName(i), err)}
	}
	r := acquireReply{index: i, outcome: acquireRefused}
	switch d := pttl.Val(); {
	case pttl.Err() != nil, d == -2: // unknown, or gone just now
	case d < 0:
		r.holderTTL = -1 // no expiry
	default:
		r.holderTTL = d
	}
	return r
}

// collect gathers answers until the attempt's outcome is settled: every instance answered, a
// quorum took a plain lock (a re-entrant attempt waits for all: see deliver), so many refused
// that no quorum is possible any more, only instances known to be down are still silent, the
// per-instance timeout passed, or ctx ended.
func (a *redlockAttempt) collect(ctx context.Context, timeout time.Duration) ([]acquireReply, error) {
	n, quorum := len(a.store.clients), a.store.quorum
	return gather(ctx, a.replies, n, timeout, func(got []acquireReply) bool {
		return !a.reentrant && countOutcome(got, acquireTaken) >= quorum || countOutcome(got, acquireRefused) > n-quorum ||
			a.store.onlyDownLeft(func(i int) bool { return slices.ContainsFunc(got, func(r acquireReply) bool { return r.index == i }) })
	})
}

// decide closes the attempt: answers delivered meanwhile are added to got (so a reply that
// raced the timer still counts), held judges the outcome, and later answers are left to
// deliver. A plain lock obtained with calls still running is listed in store.pending so
// that its release marks it given up.
func (a *redlockAttempt) decide(got []acquireReply, judge func([]acquireReply) bool) ([]acquireReply, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for drained := false; !drained; {
		select {
		case r := <-a.replies:
			got = append(got, r)
		default:
			drained = true
		}
	}
	held := judge(got)
	a.decided, a.givenUp = true, !held
	if held && !a.reentrant && a.outstanding > 0 {
		a.store.register(a)
		a.registered = true
	}
	return got, held
}

// deliver takes one instance's answer: to the collector while the attempt is open, else it
// undoes a late key of a lock that is not held. A re-entrant attempt is never decided early
// on success: its release must not overtake a re-entry still on its way.
func (a *redlockAttempt) deliver(r acquireReply) {
	a.mu.Lock()
	a.outstanding--
	a.answered[r.index] = true
	if !a.decided {
		a.replies <- r
		a.mu.Unlock()
		return
	}
	undo := a.givenUp && a.mustUndo(r)
	if a.outstanding == 0 && a.registered {
		a.store.unregister(a)
		a.registered = false
	}
	a.mu.Unlock()
	if undo {
		a.store.undo(a, []acquireReply{r})
	}
}

// mustUndo says whether r may have left our key (or our re-entry level) on its instance. The
// undo only ever removes what this attempt put there: our own value, or our own level.
func (a *redlockAttempt) mustUndo(r acquireReply) bool {
	return r.outcome == acquireTaken || r.outcome == acquireUnknown
}

// undo releases the attempt on the instances of got that may hold our key, on a context the
// caller cannot cancel, and waits for it up to the instance timeout (the rest goes on in the
// background). Each instance's undo is sent again after a failure on the way, within
// releaseTimeout like a release: sent once, a lost undo left the attempt's key or level until
// its TTL (a level kept the count too high, and the key after the owner's last Release). It
// is sent again only once the copy before has failed, so a slow instance gets no more work.
// Copies are safe: the script removes only this attempt's value, or its own level of the
// owner known by its rand, so one that runs late (after the first, after the owner entered
// again or released, after another owner took the key) removes nothing else. It wakes no
// waiter: after a split vote every contender undoes at once, and wake-ups would send them all
// back in lock-step into the next split; their jittered back-off breaks the tie.
func (s *redlockStore) undo(a *redlockAttempt, got []acquireReply) {
	var targets []int
	for _, r := range got {
		if a.mustUndo(r) {
			targets = append(targets, r.index)
		}
	}
	if len(targets) == 0 {
		return
	}
	match := a.value
	if a.reentrant {
		match = protocol.BaseOf(a.value) // the script knows a re-entrant owner by its rand
	}
	h := hold{key: a.key, match: match, op: a.op, reentrant: a.reentrant}
	ctx, callDone := callContext(context.Background(), releaseTimeout, len(targets))
	done := make(chan struct{}, len(targets))
	for _, i := range targets {
		s.spawn(func() {
			_ = retrying(ctx, func(ctx context.Context) error {
				_, err := s.releaseOn(ctx, i, h, false)
				s.health.note(i, err)
				return backendError("undo", a.key, err) // a reply of the server ends it
			})
			callDone()
			done <- struct{}{}
		})
	}
	_, _ = gather(context.Background(), done, len(targets), s.instanceTimeout(0), nil)
}

// obtained builds the result of an attempt that took a quorum.
func (a *redlockAttempt) obtained(got []acquireReply, validUntil time.Time) acquireResult {
	res := acquireResult{acquired: true, value: a.value, level: a.op, validUntil: validUntil}
	if !a.reentrant {
		return res
	}
	// A re-entry keeps the value its first entry stored, so instances that missed earlier
	// entries (down then) may hold another base or a lower count: report the base most
	// instances hold, at the deepest count seen with it.
	votes := map[string]int{}
	for _, r := range got {
		if r.outcome == acquireTaken {
			votes[protocol.BaseOf(r.stored)]++
		}
	}
	best := ""
	for base, n := range votes {
		if n > votes[best] || n == votes[best] && base < best {
			best = base
		}
	}
	count := 0
	for _, r := range got {
		if r.outcome != acquireTaken || protocol.BaseOf(r.stored) != best {
			continue
		}
		if v, err := protocol.ParseValue(r.stored); err == nil && v.Count > count {
			res.value, count = r.stored, v.Count
		}
	}
	return res
}

// notObtained explains a failed attempt. When so many instances failed that no quorum is
// possible, it is backend trouble: ErrBackend (not ErrNotObtained, which says the lock is
// taken or the context ended), so Obtain returns at once, as it does when a single Redis is
// down. An instance failed when it answered
// with an error or could not be reached, or timed out or stayed silent while known to be down
// (instanceHealth). Otherwise the lock is taken, or instances were merely slow this time (cold
// connections, a loaded host): acquired=false with a nil error, and Obtain tries again.
func (s *redlockStore) notObtained(key string, got []acquireReply, timeout time.Duration) (acquireResult, error) {
	answered := countOutcome(got, acquireTaken) + countOutcome(got, acquireRefused)
	var errs []error
	for _, r := range got {
		if r.err != nil && (!isTimeout(r.err) || s.health.isDown(r.index)) {
			errs = append(errs, r.err)
		}
	}
	replied := func(i int) bool { return slices.ContainsFunc(got, func(r acquireReply) bool { return r.index == i }) }
	for i := range s.clients {
		if !replied(i) && s.health.isDown(i) {
			errs = append(errs, fmt.Errorf("%s: down (no answer within %v, and its last call failed)", s.instanceName(i), timeout))
		}
	}
	if len(errs) <= len(s.clients)-s.quorum {
		return acquireResult{holderTTL: s.holderTTL(got)}, nil
	}
	return acquireResult{}, fmt.Errorf("%w: redlock: acquire %q: %d of %d instances answered, quorum is %d: %w",
		ErrBackend, key, answered, len(s.clients), s.quorum, joinOneLine(errs))
}

// holderTTL estimates when a quorum frees up for us: the k-th shortest holder TTL, k being how
// many more instances we need (-1 when that one has no expiry, 0 when unknown).
func (s *redlockStore) holderTTL(got []acquireReply) time.Duration {
	need := s.quorum - countOutcome(got, acquireTaken)
	var ttls []time.Duration
	for _, r := range got {
		if r.outcome == acquireRefused {
			ttl := r.holderTTL
			if ttl < 0 {
				ttl = math.MaxInt64 // no expiry sorts last
			}
			ttls = append(ttls, ttl)
		}
	}
	if need < 1 || need > len(ttls) {
		return 0
	}
	slices.Sort(ttls)
	if ttls[need-1] == math.MaxInt64 {
		return -1
	}
	return ttls[need-1]
}

func countOutcome(got []acquireReply, o acquireOutcome) int {
	n := 0
	for _, r := range got {
		if r.outcome == o {
			n++
		}
	}
	return n
}

// register lists an obtained lock whose instance calls are still running.
func (s *redlockStore) register(a *redlockAttempt) {
	s.pendingMu.Lock()
	s.pending[pendingKey(a.key, a.value)] = a
	s.pendingMu.Unlock()
}

func (s *redlockStore) unregister(a *redlockAttempt) {
	s.pendingMu.Lock()
	delete(s.pending, pendingKey(a.key, a.value))
	s.pendingMu.Unlock()
}

// giveUp marks a plain lock's acquire calls still running as given up, and reports which
// instances they are: their late answer deletes the key they set (deliver), so the release
// skips them rather than race its own acquisition's SET (and find nothing, then leave the
// late key behind).
func (s *redlockStore) giveUp(key, value string) (stillAcquiring func(i int) bool) {
	s.pendingMu.Lock()
	a := s.pending[pendingKey(key, value)]
	s.pendingMu.Unlock()
	if a == nil {
		return func(int) bool { return false }
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.givenUp = true
	running := make([]bool, len(a.answered))
	for i, done := range a.answered {
		running[i] = !done
	}
	return func(i int) bool { return running[i] }
}

func pendingKey(key, value string) string { return key + "\x00" + value }
