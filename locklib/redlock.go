package locklib

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// NewRedlock returns a Client whose locks live on a majority of N independent Redis servers
// (antirez's Redlock): a lock is held when quorum = N/2+1 instances took it within its
// validity, ttl - elapsed - drift. It has the same Obtain, TryObtain and Lock as New, so code
// switches by construction only, with one difference: Lock.Token() is always 0, because no
// fencing token from N independent counters is safe (Kleppmann's critique). Protect the
// resource with a compare-and-set on Lock.Value() there instead (docs/redlock.md).
//
// Each client must point at a different, independent master (no replicas of each other).
// N = 1 behaves like New without fencing tokens and wait queue. The clients are not closed
// by Client.Close. It takes every Option, and the Redlock-only options WithInstanceTimeout
// and WithDrift; Obtain waits with the Client's back-off with full jitter, woken by release
// messages from any instance.
func NewRedlock(clients []redis.UniversalClient, opts ...RedlockOption) (*Client, error) {
	s := &redlockStore{}
	c := newClient(s, opts)
	if err := s.setup(clients, c.cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Redlock defaults; docs/redlock.md compares them with go-redsync/redsync v4.
const (
	defaultRedlockDriftFactor = 0.01                 // share of the ttl allowed for clock drift
	defaultRedlockDriftFixed  = 2 * time.Millisecond // plus this, for timer granularity
	redlockTimeoutBase        = 5 * time.Millisecond // per-instance timeout: base + ttl/redlockTimeoutShare
	redlockTimeoutShare       = 20
	// Release and TTL have no ttl to scale a timeout with.
	redlockUntimedTimeout = 250 * time.Millisecond
)

// redlockConfig is the Redlock-only part of the Client options (options.go).
type redlockConfig struct {
	instanceTimeout time.Duration // 0: redlockTimeoutBase + ttl/redlockTimeoutShare
	driftSet        bool          // WithDrift was given; else the defaults above
	driftFactor     float64
	driftFixed      time.Duration
}

// redlockStore keeps locks on a majority of N independent Redis servers. Every operation goes
// to all instances in parallel, each bounded by its own timeout, and counts the answers
// against the quorum. It hands out no fencing tokens (fenced) and has no wait queue.
type redlockStore struct {
	clients    []redis.UniversalClient
	quorum     int
	cfg        redlockConfig
	events     bool
	health     instanceHealth
	eventQueue redlockEvents
	wake       *redlockWakeups

	// background tracks instance calls that outlive the operation that started them (their
	// answer came too late to matter); close waits for them.
	background goTracker

	pendingMu sync.Mutex
	pending   map[string]*redlockAttempt // obtained plain locks with acquire calls still running
}

// newRedlockStore is NewRedlock's store on its own (the store-level tests use it).
func newRedlockStore(clients []redis.UniversalClient, cfg config) (*redlockStore, error) {
	s := &redlockStore{}
	if err := s.setup(clients, cfg); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *redlockStore) setup(clients []redis.UniversalClient, cfg config) error {
	rc := cfg.redlock
	switch {
	case len(clients) == 0:
		return fmt.Errorf("%w: NewRedlock needs at least one Redis client", ErrInvalid)
	case rc.driftSet && !(rc.driftFactor >= 0 && rc.driftFactor < 1):
		return fmt.Errorf("%w: NewRedlock: drift factor %v is outside [0, 1)", ErrInvalid, rc.driftFactor)
	case rc.driftSet && rc.driftFixed < 0:
		return fmt.Errorf("%w: NewRedlock: negative fixed drift %v", ErrInvalid, rc.driftFixed)
	case cfg.replicas > 0:
		// Redlock's instances are independent masters: the quorum is its answer to a lost
		// instance, and a replica promoted under one of them is the failover its safety
		// argument assumes away (docs/redlock.md). WAIT on each would not make it one.
		return fmt.Errorf("%w: NewRedlock: WithReplicas is for one master with replicas; Redlock's quorum of "+
			"independent masters does not use replicas", ErrInvalid)
	}
	for i, c := range clients {
		if c == nil {
			return fmt.Errorf("%w: NewRedlock: client %d is nil", ErrInvalid, i)
		}
	}
	if !rc.driftSet {
		rc.driftFactor, rc.driftFixed = defaultRedlockDriftFactor, defaultRedlockDriftFixed
	}
	s.clients = append([]redis.UniversalClient(nil), clients...)
	s.quorum = len(clients)/2 + 1
	s.cfg = rc
	s.events = cfg.events
	s.eventQueue.clients = s.clients
	s.health = make(instanceHealth, len(s.clients))
	s.wake = newRedlockWakeups(s.clients, s.quorum)
	s.pending = map[string]*redlockAttempt{}
	return nil
}

// drift is the clock drift allowance subtracted from a lock's validity.
func (s *redlockStore) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*s.cfg.driftFactor) + s.cfg.driftFixed
}

// validity is the local deadline of a lock taken (or renewed) for ttl by calls sent at start.
// Every instance started its TTL after start, so the lock holds on a quorum until at least
// start + ttl; drift covers clocks running at different rates.
func (s *redlockStore) validity(key string, start time.Time, ttl time.Duration) (time.Time, error) {
	until := start.Add(ttl - s.drift(ttl))
	if !until.After(start) {
		return time.Time{}, fmt.Errorf("%w: redlock: %q: ttl %v leaves no validity after the clock drift allowance %v",
			ErrInvalid, key, ttl, s.drift(ttl))
	}
	return until, nil
}

// instanceTimeout bounds one instance's answer, so that a dead or frozen instance costs an
// operation at most this much instead of stalling it.
func (s *redlockStore) instanceTimeout(ttl time.Duration) time.Duration {
	switch {
	case s.cfg.instanceTimeout > 0:
		return s.cfg.instanceTimeout
	case ttl > 0:
		return redlockTimeoutBase + ttl/redlockTimeoutShare
	default:
		return redlockUntimedTimeout
	}
}

// fenced is false: each instance could count tokens, but no majority of independent counters
// yields a number that grows strictly across acquisitions when instances restart empty or
// clocks jump. Token() is 0; docs/redlock.md explains the owner-value compare-and-set to use
// at the protected storage instead.
func (s *redlockStore) fenced() bool { return false }

// refuses every kind but the plain and re-entrant lock: read-write locks, lease semaphores and
// multi-key locks are scripts over one server's data (a lease set, several keys at once),
// which N independent servers cannot agree on without a quorum protocol of their own.
func (s *redlockStore) refuses(k kind, call string) error {
	if k != kindLock {
		return fmt.Errorf("%w: %s is not supported on Redlock", ErrInvalid, call)
	}
	return nil
}

// wakeups takes one key: Redlock keeps single-key locks only (refuses).
func (s *redlockStore) wakeups(keys ...string) (<-chan struct{}, func()) {
	return s.wake.subscribe(keys[0])
}

// close stops the wake-up subscriptions and the event queue, and waits for the instance
// calls still running (each bounded by its client's own timeouts). Locks already held keep
// working; their events are no longer published. The caller's clients stay open.
func (s *redlockStore) close() error {
	s.wake.close()
	s.eventQueue.close()
	s.background.wait()
	return nil
}

// spawn runs f as a tracked background goroutine.
func (s *redlockStore) spawn(f func()) { s.background.spawn(f) }

// instanceName names instance i in errors: its address when the client tells it.
func (s *redlockStore) instanceName(i int) string {
	if c, ok := s.clients[i].(*redis.Client); ok {
		return c.Options().Addr
	}
	return fmt.Sprintf("instance %d", i)
}

// release gives the lock up on every instance in parallel (compare-and-delete, or one re-entry
// level down). A plain lock's release returns as soon as a quorum let go: the lock is free for
// others then, and the slower instances finish in the background (a slow or frozen instance
// does not hold up the caller). A re-entrant one waits for every instance, so that the next
// level's release cannot overtake it on a slow instance. Otherwise it waits for every instance
// that is not known to be down, each bounded by the instance timeout, and succeeds when a
// quorum answered and none of them holds our value any more (an instance that did not answer
// keeps its copy until the TTL). An instance whose acquire answer is still out counts with
// them: that late answer deletes the key it set, so it cannot keep our value either.
// ErrNotHeld when so many instances no longer had our value that the lock had lost its
// quorum before; ErrBackend when fewer than a quorum answered.
func (s *redlockStore) release(ctx context.Context, h hold) error {
	n := len(s.clients)
	targets := s.allInstances()
	undoing := 0 // instances whose acquire answer is still out: that answer deletes our key
	if !h.reentrant {
		targets = slices.DeleteFunc(targets, s.giveUp(h.key, h.match))
		undoing = n - len(targets)
	}
	tally := func(got []instanceReply[int64]) (released, notHeld int) {
		for _, r := range got {
			switch {
			case r.err != nil:
			case r.val == -1:
				notHeld++
			default: // deleted, levels left, or -2: a copy of this release ran already
				released++
			}
		}
		return released, notHeld
	}
	timeout := s.instanceTimeout(0)
	got, ctxErr := fanOut(ctx, s, targets, timeout, func(ctx context.Context, i int) (int64, error) {
		return s.releaseOn(ctx, i, h, true)
	}, func(got []instanceReply[int64]) bool {
		released, notHeld := tally(got)
		return !h.reentrant && released >= s.quorum || notHeld > n-s.quorum || s.onlyDownLeft(func(i int) bool {
			return answeredIn(got)(i) || !slices.Contains(targets, i)
		})
	})
	released, notHeld := tally(got)
	lostBefore := notHeld > n-s.quorum
	switch {
	case released >= s.quorum || !lostBefore && released > 0 && released+notHeld+undoing >= s.quorum:
		s.publish(holderEvent(EventReleased, h.key, h.match))
		return nil
	case lostBefore:
		return fmt.Errorf("%w: redlock: %q was still held on %d of %d instances, quorum is %d",
			ErrNotHeld, h.key, released, n, s.quorum)
	}
	return s.quorumError("release", h.key, released, targets, got, timeout, ctxErr)
}

// releaseOn runs the release script on instance i: -1 not held, -2 a copy of this release
// ran already, 0 deleted, else the re-entry levels left. A release (final) ends h's operation
// and announces a deleted key to Redlock waiters. The undo of one attempt (final false)
// announces nothing, for the Obtain goes on. A re-entrant attempt's undo ends its level's
// operation, which is the attempt's own: a copy of the attempt that reaches the instance
// after its undo takes nothing. A plain attempt's undo ends nothing: its op is the Obtain's,
// whose later attempt may still take the lock (and a SET NX does not look at ended ones).
func (s *redlockStore) releaseOn(ctx context.Context, i int, h hold, final bool) (int64, error) {
	reentrant, rec, channel := "0", "0", ""
	if h.reentrant {
		reentrant, rec = "1", "1"
	}
	if final {
		rec, channel = "1", protocol.RedlockReleasedChannel
	}
	keys := []string{h.key, protocol.LevelsKey(h.key), protocol.EndedKey(h.key)}
	return scriptRedlockRelease.Run(ctx, s.clients[i], keys, h.match, reentrant, channel, h.op, rec).Int64()
}

// refresh extends the lock to ttl on every instance in parallel (refresh.lua). It succeeds
// with a quorum extended within the new validity, start + ttl - drift; ErrNotHeld when so
// many instances no longer have our value that no quorum is possible. It returns as soon as
// the outcome is settled; a slow instance's extension finishes in the background.
func (s *redlockStore) refresh(ctx context.Context, h hold, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	key := h.key
	if err := validate(key, ttl); err != nil {
		return time.Time{}, err
	}
	validUntil, err := s.validity(key, start, ttl)
	if err != nil {
		return time.Time{}, err
	}
	n := len(s.clients)
	tally := func(got []instanceReply[int64]) (extended, refused int) {
		for _, r := range got {
			switch {
			case r.err != nil:
			case r.val >= 0:
				extended++
			default:
				refused++
			}
		}
		return extended, refused
	}
	timeout := s.instanceTimeout(ttl)
	got, ctxErr := fanOut(ctx, s, s.allInstances(), timeout,
		func(ctx context.Context, i int) (int64, error) {
			return scriptRefresh.Run(ctx, s.clients[i], []string{key, protocol.LevelsKey(key)}, h.match, h.level(), ttl.Milliseconds(), "").Int64()
		},
		func(got []instanceReply[int64]) bool {
			extended, refused := tally(got)
			return extended >= s.quorum || refused > n-s.quorum || s.onlyDownLeft(answeredIn(got))
		})
	extended, refused := tally(got)
	switch {
	case extended >= s.quorum && time.Now().Before(validUntil):
		e := holderEvent(EventRenewed, key, h.match)
		e.TTLMs = ttl.Milliseconds()
		s.publish(e)
		return validUntil, nil
	case extended >= s.quorum:
		return time.Time{}, fmt.Errorf("%w: redlock: renewal of %q confirmed only after its validity (%v) had passed",
			ErrBackend, key, ttl-s.drift(ttl))
	case refused > n-s.quorum:
		return time.Time{}, fmt.Errorf("%w: redlock: %q is still held on %d of %d instances, quorum is %d",
			ErrNotHeld, key, extended, n, s.quorum)
	}
	return time.Time{}, s.quorumError("refresh", key, extended, s.allInstances(), got, timeout, ctxErr)
}

// pttl is the lock's remaining time as the instances see it: the quorum-th longest TTL among
// the instances that hold our value (when it runs out, no majority holds the lock any more),
// 0 when no quorum holds it, -1 when that TTL is "no expiry".
func (s *redlockStore) pttl(ctx context.Context, h hold) (time.Duration, error) {
	key := h.key
	timeout := s.instanceTimeout(0)
	got, ctxErr := fanOut(ctx, s, s.allInstances(), timeout,
		func(ctx context.Context, i int) (int64, error) {
			return scriptPTTL.Run(ctx, s.clients[i], []string{key, protocol.LevelsKey(key)}, h.match, h.level()).Int64()
		}, func(got []instanceReply[int64]) bool { return s.onlyDownLeft(answeredIn(got)) })
	var held []time.Duration
	var notHeld int
	for _, r := range got {
		switch {
		case r.err != nil:
		case r.val == -3:
			notHeld++
		case r.val < 0: // our value without an expiry: someone PERSISTed it
			held = append(held, math.MaxInt64)
		default:
			held = append(held, time.Duration(r.val)*time.Millisecond)
		}
	}
	n := len(s.clients)
	switch {
	case len(held) >= s.quorum:
		slices.SortFunc(held, func(a, b time.Duration) int { return cmp.Compare(b, a) })
		if d := held[s.quorum-1]; d != math.MaxInt64 {
			return d, nil
		}
		return -1, nil
	case notHeld > n-s.quorum:
		return 0, nil
	}
	return 0, s.quorumError("pttl", key, len(held)+notHeld, s.allInstances(), got, timeout, ctxErr)
}
