package locklib

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Obtain takes the lock on key for ttl, waiting until it is held, the context ends (an error
// wrapping both ErrNotObtained and ctx.Err()) or the backend fails (ErrBackend, returned at
// once rather than retried until the context ends). Waiters queue in arrival order and
// the releasing client wakes only the first one (docs/locklib.md, "Waiting").
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "Obtain", kind: kindLock, key: key, ttl: ttl, wait: true}, opts)
}

// TryObtain makes one attempt. When the key is held, or free but with waiters queued
// (TryObtain never jumps the queue), the error wraps ErrNotObtained.
func (c *Client) TryObtain(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "TryObtain", kind: kindLock, key: key, ttl: ttl}, opts)
}

// obtainCall is one call of the Obtain loop that every kind of lock shares (obtain): waiting
// in the store's queue, back-off, wake-ups, the Tracer and the observer.
type obtainCall struct {
	name string // the method, as the Tracer and error messages name it ("Obtain", "TryObtainRead"...)
	kind kind
	key  string
	ttl  time.Duration
	wait bool // wait in the queue until taken (Obtain), or make one attempt (TryObtain)
	// check refuses options that this kind does not take (nil: every option is fine).
	check func(key string, lc lockConfig) error
	// prepare sets the fields of the request that only this kind has (nil: none).
	prepare func(req *acquireRequest)
}

func (c *Client) obtain(ctx context.Context, call obtainCall, opts []LockOption) (*Lock, error) {
	began := time.Now()
	key, ttl, wait := call.key, call.ttl, call.wait
	if err := validate(key, ttl); err != nil {
		return nil, err
	}
	lc := newLockConfig(opts)
	if err := validateLock(key, lc); err != nil {
		return nil, err
	}
	if call.check != nil {
		if err := call.check(key, lc); err != nil {
			return nil, err
		}
	}
	if err := c.store.refuses(call.kind, call.name); err != nil {
		return nil, err
	}
	ctx, end := c.startCall(ctx, call.name, key)
	finish := func(o Observation) {
		c.observe(o)
		end(o)
	}
	req := acquireRequest{kind: call.kind, key: key, value: c.newValue(key, lc), ttl: ttl, reentrant: lc.reentrant,
		op: c.nextOpID(), queue: wait}
	if call.prepare != nil {
		call.prepare(&req)
	}
	var wake <-chan struct{}
	if wait {
		// Registered before the first attempt (a map entry, no round trip), so a wake-up
		// or hand-off right after that attempt finds this waiter.
		signal, stop := c.store.wakeups(req.lockedKeys()...)
		defer stop()
		req.wake, wake = signal, signal
	}

	bo := newBackoff(c.cfg.backoffBase, c.cfg.backoffCap)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	queued := false
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.giveUp(req, attempt-1, began, ctxEnded(req.subject(), err), finish)
		}
		req.start = time.Now()
		req.waited = req.start.Sub(began)
		res, err := c.store.acquire(ctx, req)
		latency := time.Since(req.start)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, c.giveUp(req, attempt, began, ctxEnded(req.subject(), ctxErr), finish)
			}
			return nil, c.giveUp(req, attempt, began, backendError("acquire", key, err), finish)
		}
		if res.acquired && !time.Now().Before(res.validUntil) {
			// The answer came after the lock's validity had passed: it may be someone
			// else's already. Let it go, and go on as a new operation (the old one has
			// ended: a late copy of its requests must take nothing).
			c.abandon(req)
			req.op = c.nextOpID()
			if !wait {
				err := fmt.Errorf("%w: %s was taken, but the answer came after its ttl had run out", ErrNotObtained, req.subject())
				finish(Observation{Type: EventNotObtained, Key: key, Attempts: 1, Wait: time.Since(began),
					Latency: latency, Err: err})
				return nil, err
			}
			res = acquireResult{position: -1} // wait, and try again
		}
		if res.acquired {
			l := c.newLock(req, res, lc)
			finish(Observation{Type: EventAcquired, Key: key, Token: l.Token(), Waiters: res.waiters,
				Attempts: attempt, Wait: time.Since(began), Latency: latency})
			return l, nil
		}
		if !wait {
			err := notObtained(call.kind, cmp.Or(res.blocking, key), res)
			finish(Observation{Type: EventNotObtained, Key: key, Attempts: 1, Wait: time.Since(began), Latency: latency, Err: err})
			return nil, err
		}
		if !queued {
			queued = true
			c.observe(Observation{Type: EventWaiting, Key: key, Waiters: res.waiters, Latency: latency})
		}
		d := bo.next()
		if res.position > 0 {
			// Not next in line: the release before ours wakes us; this poll only covers a
			// lost wake-up or a crashed waiter ahead.
			d = c.cfg.backoffCap/2 + time.Duration(rand.Int64N(int64(c.cfg.backoffCap/2)+1))
		}
		if res.holderTTL > 0 && res.holderTTL < d {
			d = res.holderTTL // try again when the holder's TTL runs out
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timer.C:
		}
	}
}

// giveUp ends a failed Obtain and reports it to finish (the observer and the Tracer's
// end). An attempt whose answer did not come (context ended, backend error) may still have
// taken the lock or queued the waiter, and a release of this client may hand it the lock:
// the store cleans up after it.
func (c *Client) giveUp(req acquireRequest, attempts int, began time.Time, err error, finish func(Observation)) error {
	if attempts > 0 {
		c.abandon(req)
	}
	finish(Observation{Type: EventNotObtained, Key: req.key, Attempts: attempts, Wait: time.Since(began), Err: err})
	return err
}

// abandon has the store clean up after an operation that took nothing it keeps, in the
// background (bounded like a release, on a context the caller cannot cancel), so that the
// Obtain returns at its context's end even when the server does not answer.
func (c *Client) abandon(req acquireRequest) {
	if a, ok := c.store.(abandoner); ok {
		a.abandonLater(req)
	}
}

// ctxEnded is the error of an Obtain whose context ended first (subject names what it would
// have taken: req.subject()): errors.Is finds both ErrNotObtained and the context's error.
func ctxEnded(subject string, ctxErr error) error {
	return fmt.Errorf("%w: %s: %w", ErrNotObtained, subject, ctxErr)
}

func notObtained(k kind, key string, res acquireResult) error {
	switch {
	case k == kindPermit:
		return fmt.Errorf("%w: %q has no permit free for this TryAcquire (%d waiters queued)", ErrNotObtained, key, res.waiters)
	case res.holderTTL == 0 && res.waiters > 0:
		return fmt.Errorf("%w: %q is free but %d waiters are queued first", ErrNotObtained, key, res.waiters)
	case res.holderTTL == 0:
		// Redlock: no quorum in time, and no single holder TTL to report.
		return fmt.Errorf("%w: %q could not be taken on a quorum in time", ErrNotObtained, key)
	case res.holderTTL < 0:
		return fmt.Errorf("%w: %q is held with no expiry", ErrNotObtained, key)
	default:
		return fmt.Errorf("%w: %q is held (ttl %v, %d waiting)", ErrNotObtained, key, res.holderTTL, res.waiters)
	}
}
