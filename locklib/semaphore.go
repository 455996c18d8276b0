package locklib

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Semaphore is a lease semaphore: at most a limit of permits out at once on one key, each
// permit a *Lock of its own (its own ttl, watchdog, Lost() and fencing token), so a holder
// that crashed gives its permit back when its ttl runs out. It lives in a lease set at the
// key (docs/value-format.md, "Lease sets"); its limit at protocol.LimitKey(key) is shared
// by every Semaphore on the key: the first Acquire writes it, Resize changes it.
type Semaphore struct {
	c       *Client
	key     string
	permits int
}

// SemaphoreStatus is a semaphore's state as the server sees it.
type SemaphoreStatus struct {
	Limit   int // permits that may be out at once
	InUse   int // live permits out (above Limit after a shrink, until enough are released)
	Waiters int // live waiters queued
}

// Semaphore returns the lease semaphore on key with the given number of permits, which is
// its limit while protocol.LimitKey(key) is absent (the first Acquire writes it there; a
// later Resize, not this number, changes it). permits must be at least 1: every method of a
// Semaphore made with fewer fails with ErrInvalid.
func (c *Client) Semaphore(key string, permits int) *Semaphore {
	return &Semaphore{c: c, key: key, permits: permits}
}

// Acquire takes a permit for ttl, waiting until one is granted, the context ends (an error
// wrapping ErrNotObtained and ctx.Err()) or the backend fails (ErrBackend). Waiters are
// served in arrival order: a waiter is granted a permit while it is among the first
// (limit - permits out) waiters, and a release wakes the waiters its permit goes to. The
// permit is a *Lock: Release gives it back, Refresh and WithWatchdog extend it, Lost()
// closes when it is lost, Token() is a fencing token drawn for this grant. Reentrant is
// refused (ErrInvalid): permits are not re-entrant.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return s.c.obtain(ctx, obtainCall{name: "Acquire", kind: kindPermit, key: s.key, ttl: ttl, wait: true,
		check: s.check, prepare: s.prepare}, opts)
}

// TryAcquire makes one attempt: granted only if a permit is free after every queued waiter
// has had one (TryAcquire never jumps the queue); else an error wrapping ErrNotObtained.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return s.c.obtain(ctx, obtainCall{name: "TryAcquire", kind: kindPermit, key: s.key, ttl: ttl,
		check: s.check, prepare: s.prepare}, opts)
}

func (s *Semaphore) check(key string, lc lockConfig) error {
	if err := s.valid(); err != nil {
		return err
	}
	if lc.reentrant {
		return fmt.Errorf("%w: %q: a semaphore's permits are not re-entrant: Reentrant is refused", ErrInvalid, key)
	}
	return nil
}

func (s *Semaphore) prepare(req *acquireRequest) { req.limit = s.permits }

func (s *Semaphore) valid() error {
	if s.permits < 1 {
		return fmt.Errorf("%w: %q: a semaphore needs at least 1 permit, not %d", ErrInvalid, s.key, s.permits)
	}
	return nil
}

// Resize sets the semaphore's limit to permits (at least 1) for every Semaphore on the key.
// Growing it wakes the waiters the new permits go to; shrinking it takes no permit back: no
// permit is granted until fewer than the new limit are out.
func (s *Semaphore) Resize(ctx context.Context, permits int) error {
	ss, err := s.store("Resize")
	if err != nil {
		return err
	}
	if permits < 1 {
		return fmt.Errorf("%w: %q: a semaphore needs at least 1 permit, not %d", ErrInvalid, s.key, permits)
	}
	c := protocol.CompanionKeys(s.key)
	keys := []any{s.key, c[protocol.WaitQueue-1], c[protocol.WaitPresence-1], protocol.LimitKey(s.key)}
	if _, err := run(ctx, ss, scriptSemResize, keys, []any{permits}, cmdInt64, nil); err != nil {
		return backendError("resize", s.key, err)
	}
	return nil
}

// Status reads the semaphore's limit, live permits out and live waiters.
func (s *Semaphore) Status(ctx context.Context) (SemaphoreStatus, error) {
	ss, err := s.store("Status")
	if err != nil {
		return SemaphoreStatus{}, err
	}
	keys := []any{s.key, protocol.WaitPresenceKey(s.key), protocol.LimitKey(s.key)}
	reply, err := run(ctx, ss, scriptSemStatus, keys, nil, cmdSlice, nil)
	if err != nil {
		return SemaphoreStatus{}, backendError("status", s.key, err)
	}
	if len(reply) != 3 {
		return SemaphoreStatus{}, fmt.Errorf("%w: status %q: unexpected reply %v", ErrBackend, s.key, reply)
	}
	st := SemaphoreStatus{Limit: s.permits}
	if text, _ := reply[0].(string); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil || n < 1 || strconv.Itoa(n) != text { // as the acquire reads it (permitLimit)
			return SemaphoreStatus{}, fmt.Errorf("%w: status %q: %s holds %q, not a count of at least 1 (Resize sets it)",
				ErrBackend, s.key, protocol.LimitKey(s.key), text)
		}
		st.Limit = n
	}
	inUse, _ := reply[1].(int64)
	waiters, _ := reply[2].(int64)
	st.InUse, st.Waiters = int(inUse), int(waiters)
	return st, nil
}

// store is the single-server store that Resize and Status run on; an error wrapping
// ErrInvalid on Redlock, or for a Semaphore without permits.
func (s *Semaphore) store(call string) (*singleStore, error) {
	if err := s.valid(); err != nil {
		return nil, err
	}
	if err := s.c.store.refuses(kindPermit, call); err != nil {
		return nil, err
	}
	if s.key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	ss := s.c.store.(*singleStore)
	if err := ss.checkKey(s.key); err != nil {
		return nil, err
	}
	return ss, nil
}

// ---- the single store's side of permits: the semaphore_*.lua scripts ----

// permitKeys are a semaphore's key and the companions its acquire script takes (as command
// arguments): lease set, fence counter, wait queue, presence, ended operations, limit.
func permitKeys(key string) []any {
	c := protocol.CompanionKeys(key)
	return []any{key, c[protocol.Fence-1], c[protocol.WaitQueue-1], c[protocol.WaitPresence-1], c[protocol.Ended-1],
		protocol.LimitKey(key)}
}

// acquirePermit is one attempt of an Acquire or TryAcquire (semaphore_acquire.lua). Releasing,
// renewing and cleaning up after a permit are the lease set's (lease.go). A permit is never
// handed over by a release: the release wakes the waiters its permit goes to, and they take
// it with their next attempt.
func (s *singleStore) acquirePermit(ctx context.Context, req acquireRequest) (acquireResult, error) {
	return s.acquireLease(ctx, req, scriptSemAcquire, permitKeys(req.key), func(entry, acquiredEvent, waitingEvent, before, after string) []any {
		return []any{req.op, req.ttl.Milliseconds(), entry, s.windowArg, fenceLifetime(req.ttl, s.fenceFor).Milliseconds(),
			req.limit, acquiredEvent, waitingEvent, before, after}
	})
}
