package locklib

import (
	"fmt"
	"sync"
	"time"

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
	s.wake = newRedlockWakeups(s.clients)
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

func (s *redlockStore) wakeups(key string) (<-chan struct{}, func()) {
	return s.wake.subscribe(key)
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
