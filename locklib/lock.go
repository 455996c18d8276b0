package locklib

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Lock is a held lock. Its methods are safe for concurrent use.
type Lock struct {
	c          *Client
	h          hold   // what the store needs: key, what to compare, the operation id
	value      string // as stored at acquisition (with the count for a re-entrant lock)
	trace      string
	token      int64
	ttl        time.Duration
	acquiredAt time.Time
	lost       chan struct{}

	mu sync.Mutex
	// validUntil is the local deadline: presumed lost after it unless a renewal confirmed
	// before it moves it. It never moves back, and it is never later than the key's real
	// expiry: every Lock's renewal only ever extends the key (refresh).
	validUntil time.Time
	expiry     *time.Timer // fires at validUntil
	err        error       // set when lost
	released   bool
	dog        *watchdog // nil without WithWatchdog
}

func (c *Client) newLock(req acquireRequest, res acquireResult, lc lockConfig) *Lock {
	l := &Lock{
		c:          c,
		h:          req.hold(res),
		value:      res.value,
		trace:      req.value.Trace,
		ttl:        req.ttl,
		acquiredAt: req.start,
		lost:       make(chan struct{}),
		validUntil: res.validUntil,
	}
	if c.store.fenced() {
		l.token = res.token
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiry = time.AfterFunc(time.Until(l.validUntil), l.validityPassed)
	if lc.watchdog {
		l.dog = startWatchdog(l, lc)
	}
	return l
}

// Key is the locked key.
func (l *Lock) Key() string { return l.h.key }

// Value is the value stored at acquisition (docs/value-format.md).
func (l *Lock) Value() string { return l.value }

// Token is the fencing token given at acquisition: strictly greater than every token given
// before for this key. Pass it to the protected resource, which must refuse writes with a
// token lower than one it has seen. 0 when the store has no safe tokens (Redlock).
func (l *Lock) Token() int64 { return l.token }

// Lost is closed once the lock is known lost (a renewal or Refresh was refused) or presumed
// lost (its validity deadline passed without a confirmed renewal); Err says which. A
// Release does not close it.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Err is nil while the lock is held, and wraps ErrLost (plus ErrNotHeld or
// ErrValidityPassed) once Lost() is closed.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Refresh extends the lock to live at least ttl from now, if it is still held by this Lock;
// it never shortens it (another level of a re-entrant lock, or a renewal that answered
// late, may rely on the longer expiry), so a ttl below the remaining time changes nothing.
// ErrNotHeld when the key is gone or held by someone else (and Lost() closes); once Lost()
// is closed, Refresh returns Err(); ErrBackend on backend trouble.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if err := validate(l.h.key, ttl); err != nil {
		return err
	}
	l.mu.Lock()
	released, lost := l.released, l.err
	l.mu.Unlock()
	switch {
	case released:
		return fmt.Errorf("%w: %q was released", ErrNotHeld, l.h.key)
	case lost != nil:
		return lost
	}
	start := time.Now()
	validUntil, err := l.c.store.refresh(ctx, l.h, ttl)
	return l.renewed(start, validUntil, err)
}

// renewed records the outcome of a Refresh or a watchdog renewal. A confirmed renewal moves
// the deadline only forward, and only while it has not passed: a lock whose deadline passed
// is lost even if a renewal answers later (the key may have expired and been taken by
// someone else in between).
func (l *Lock) renewed(start, validUntil time.Time, err error) error {
	latency := time.Since(start)
	switch {
	case errors.Is(err, ErrNotHeld):
		l.c.renewFailed(l, latency, err)
		l.lose(err)
		return err
	case err != nil:
		err = backendError("refresh", l.h.key, err)
		l.c.renewFailed(l, latency, err)
		return err
	}
	passed := false
	l.mu.Lock()
	switch {
	case l.err != nil:
		err = l.err
	case l.released:
		err = fmt.Errorf("%w: %q was released", ErrNotHeld, l.h.key)
	case !time.Now().Before(l.validUntil):
		passed = true
	case validUntil.After(l.validUntil):
		l.validUntil = validUntil
		l.expiry.Reset(time.Until(validUntil))
	}
	l.mu.Unlock()
	if passed {
		l.lose(l.validityPassedErr())
		if lost := l.Err(); lost != nil {
			return lost
		}
		return fmt.Errorf("%w: %q", ErrValidityPassed, l.h.key) // released meanwhile
	}
	if err != nil {
		return err
	}
	l.c.observe(Observation{Type: EventRenewed, Key: l.h.key, Latency: latency, TTL: time.Until(validUntil)})
	return nil
}

// Release gives the lock up (one level for a re-entrant lock): an owner-checked
// compare-and-delete in Lua. It stops the watchdog before sending the script, and it runs
// even when ctx is already cancelled (with a short timeout of its own), so a cancelled
// request never leaves its lock held until the TTL. ErrNotHeld when the lock was not
// held any more (expired, taken over, or released before).
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("%w: %q was already released", ErrNotHeld, l.h.key)
	}
	l.released = true
	wasLost := l.err != nil
	l.expiry.Stop()
	dog := l.dog
	l.mu.Unlock()
	if dog != nil {
		dog.stop() // returns once no renewal can be in flight
	}

	ctx, end := l.c.startCall(ctx, "Release", l.h.key)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	start := time.Now()
	err := retrying(rctx, func(ctx context.Context) error { return l.c.store.release(ctx, l.h) })
	if err != nil && !errors.Is(err, ErrNotHeld) {
		err = backendError("release", l.h.key, err)
	}
	o := Observation{Type: EventReleased, Key: l.h.key, Hold: time.Since(l.acquiredAt), Latency: time.Since(start), Err: err,
		WasLost: wasLost}
	l.c.observe(o)
	end(o)
	return err
}

// TTL is the lock's remaining time as Redis sees it: 0 when it is no longer held with this
// Lock's value, negative when the key has no expiry (someone removed it).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	d, err := l.c.store.pttl(ctx, l.h)
	if err != nil {
		return 0, backendError("pttl", l.h.key, err)
	}
	return d, nil
}

// validityPassed runs when the validity deadline timer fires.
func (l *Lock) validityPassed() {
	l.mu.Lock()
	early := time.Now().Before(l.validUntil) // a renewal moved the deadline meanwhile
	l.mu.Unlock()
	if !early {
		l.lose(l.validityPassedErr())
	}
}

// validityPassedErr is the reason a lock whose deadline passed is lost, naming its key as
// every reason given to lose does.
func (l *Lock) validityPassedErr() error {
	return fmt.Errorf("%q: %w", l.h.key, ErrValidityPassed)
}

// lose marks the lock lost once: Err is set, Lost() closes, the watchdog stops. reason
// names the key.
func (l *Lock) lose(reason error) {
	l.mu.Lock()
	if l.released || l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = fmt.Errorf("%w: %w", ErrLost, reason)
	close(l.lost)
	l.expiry.Stop()
	dog := l.dog
	l.mu.Unlock()
	if dog != nil {
		dog.cancel() // no wait: lose may run on the watchdog's own goroutine
	}
	hold := time.Since(l.acquiredAt)
	l.c.observe(Observation{Type: EventLost, Key: l.h.key, Hold: hold, Err: l.err})
	l.c.publishPerKey(l, protocol.Event{Type: string(EventLost), Value: l.value, Mode: l.h.kind.eventMode(),
		Node: l.c.cfg.node, Trace: l.trace, Token: l.token, HoldMs: hold.Milliseconds(), Reason: reason.Error()})
}
