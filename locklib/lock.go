package locklib

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lock is a held lock. Its methods are safe for concurrent use.
type Lock struct {
	c          *Client
	key        string
	value      string // as stored at acquisition (with the count for a re-entrant lock)
	trace      string
	match      string // what the scripts compare: value, or its base for a re-entrant lock
	reentrant  bool
	token      int64
	ttl        time.Duration
	acquiredAt time.Time
	lost       chan struct{}

	mu         sync.Mutex
	validUntil time.Time   // local deadline: presumed lost after it unless renewed
	expiry     *time.Timer // fires at validUntil
	err        error       // set when lost
	released   bool
	dog        *watchdog // nil without WithWatchdog
}

func (c *Client) newLock(req acquireRequest, res acquireResult, lc lockConfig, began time.Time) *Lock {
	l := &Lock{
		c:          c,
		key:        req.key,
		value:      res.value,
		trace:      req.value.Trace,
		match:      res.value,
		reentrant:  req.reentrant,
		ttl:        req.ttl,
		acquiredAt: req.start,
		lost:       make(chan struct{}),
		validUntil: res.validUntil,
	}
	if req.reentrant {
		if v, err := ParseValue(res.value); err == nil {
			l.match = v.Base()
		}
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
func (l *Lock) Key() string { return l.key }

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

// Refresh sets the lock's TTL to ttl if it is still held by this Lock. ErrNotHeld when the
// key is gone or held by someone else (and Lost() closes); ErrBackend on backend trouble.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if err := validate(l.key, ttl); err != nil {
		return err
	}
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return fmt.Errorf("%w: %q was released", ErrNotHeld, l.key)
	}
	start := time.Now()
	validUntil, err := l.c.store.refresh(ctx, l.key, l.match, ttl)
	return l.renewed(start, validUntil, err)
}

// renewed records the outcome of a Refresh or a watchdog renewal.
func (l *Lock) renewed(start, validUntil time.Time, err error) error {
	latency := time.Since(start)
	switch {
	case errors.Is(err, ErrNotHeld):
		l.c.renewFailed(l, latency, err)
		l.lose(err)
		return err
	case err != nil:
		err = backendError("refresh", l.key, err)
		l.c.renewFailed(l, latency, err)
		return err
	}
	l.mu.Lock()
	if l.err == nil && !l.released {
		l.validUntil = validUntil
		l.expiry.Reset(time.Until(validUntil))
	}
	l.mu.Unlock()
	l.c.observe(Observation{Type: EventRenewed, Key: l.key, Latency: latency, TTL: time.Until(validUntil)})
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
		return fmt.Errorf("%w: %q was already released", ErrNotHeld, l.key)
	}
	l.released = true
	l.expiry.Stop()
	dog := l.dog
	l.mu.Unlock()
	if dog != nil {
		dog.stop() // returns once no renewal can be in flight
	}

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	start := time.Now()
	_, err := l.c.store.release(rctx, l.key, l.match, l.reentrant)
	if err != nil && !errors.Is(err, ErrNotHeld) {
		err = backendError("release", l.key, err)
	}
	l.c.observe(Observation{Type: EventReleased, Key: l.key, Hold: time.Since(l.acquiredAt), Latency: time.Since(start), Err: err})
	return err
}

// TTL is the lock's remaining time as Redis sees it: 0 when it is no longer held with this
// Lock's value, negative when the key has no expiry (someone removed it).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	d, err := l.c.store.pttl(ctx, l.key, l.match)
	if err != nil {
		return 0, backendError("pttl", l.key, err)
	}
	return d, nil
}

// validityPassed runs when the validity deadline timer fires.
func (l *Lock) validityPassed() {
	l.mu.Lock()
	early := time.Now().Before(l.validUntil) // a renewal moved the deadline meanwhile
	l.mu.Unlock()
	if !early {
		l.lose(ErrValidityPassed)
	}
}

// lose marks the lock lost once: Err is set, Lost() closes, the watchdog stops.
func (l *Lock) lose(reason error) {
	l.mu.Lock()
	if l.released || l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = fmt.Errorf("%w: %q: %w", ErrLost, l.key, reason)
	close(l.lost)
	l.expiry.Stop()
	dog := l.dog
	l.mu.Unlock()
	if dog != nil {
		dog.cancel() // no wait: lose may run on the watchdog's own goroutine
	}
	hold := time.Since(l.acquiredAt)
	l.c.observe(Observation{Type: EventLost, Key: l.key, Hold: hold, Err: l.err})
	l.c.publish(Event{Type: EventLost, Key: l.key, Value: l.value, Node: l.c.cfg.node, Trace: l.trace,
		Token: l.token, HoldMs: hold.Milliseconds(), Reason: reason.Error()})
}
