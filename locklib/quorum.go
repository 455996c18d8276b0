package locklib

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redlock store's calls go to N instances at once and count the answers against the
// quorum: the fan-out, the instances' health, and the error when too few answered.

// instanceReply is one instance's answer to a call sent to several instances.
type instanceReply[T any] struct {
	index int
	val   T
	err   error
}

// fanOut sends call to the instances in indices in parallel, one goroutine each, all bounded
// by timeout, and collects answers until all arrived, decided says the outcome cannot
// change any more, the timeout passes or ctx ends (then with ctx's error). go-redis honours a
// context deadline on the socket only with ContextTimeoutEnabled, so the timer here is what
// bounds the wait; calls still running finish in the background and their answers are dropped.
// The calls run on a context the caller's cancellation cannot cut short, so that an operation
// either reaches an instance whole or not at all as far as this process can tell.
func fanOut[T any](ctx context.Context, s *redlockStore, indices []int, timeout time.Duration,
	call func(ctx context.Context, i int) (T, error),
	decided func(got []instanceReply[T]) bool,
) ([]instanceReply[T], error) {
	replies := make(chan instanceReply[T], len(indices))
	callCtx, callDone := callContext(ctx, timeout, len(indices))
	for _, i := range indices {
		s.spawn(func() {
			v, err := call(callCtx, i)
			callDone()
			s.health.note(i, err)
			replies <- instanceReply[T]{index: i, val: v, err: err}
		})
	}
	return gather(ctx, replies, len(indices), timeout, decided)
}

// gather collects up to n replies until decided (nil: never) says the outcome cannot change
// any more, timeout passes or ctx ends (then with ctx's error).
func gather[R any](ctx context.Context, replies <-chan R, n int, timeout time.Duration, decided func(got []R) bool) ([]R, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	got := make([]R, 0, n)
	for len(got) < n {
		select {
		case r := <-replies:
			got = append(got, r)
			if decided != nil && decided(got) {
				return got, nil
			}
		case <-timer.C:
			return got, nil
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
	return got, nil
}

// callContext is the context of calls sent to several instances at once: one deadline for all
// (they start together), detached from the caller's cancellation, and released when the last
// of the calls reports done (not when the operation returns: late calls still run).
func callContext(parent context.Context, timeout time.Duration, calls int) (context.Context, func()) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	var running atomic.Int32
	running.Store(int32(calls))
	return ctx, func() {
		if running.Add(-1) == 0 {
			cancel()
		}
	}
}

// allInstances lists every instance index.
func (s *redlockStore) allInstances() []int {
	out := make([]int, len(s.clients))
	for i := range out {
		out[i] = i
	}
	return out
}

// silentErrors describes the instances in indices that did not answer within timeout.
func (s *redlockStore) silentErrors(indices []int, answered func(i int) bool, timeout time.Duration) []error {
	var errs []error
	for _, i := range indices {
		if !answered(i) {
			errs = append(errs, fmt.Errorf("%s: no answer within %v", s.instanceName(i), timeout))
		}
	}
	return errs
}

// instanceHealth counts, per instance, its calls that failed in a row: an instance is known
// down after a connection failure (refused, reset, closed), or after downAfterTimeouts
// timeouts in a row (a killed instance often only times out: go-redis keeps redialing it past
// the deadline), and up again after any answer. A silent instance that is known down counts
// as failed; a single timeout only means slow: on a loaded host every instance is at times.
type instanceHealth []atomic.Int32

const downAfterTimeouts = 3

func (h instanceHealth) note(i int, err error) {
	switch {
	case isConnectionFailure(err):
		h[i].Store(downAfterTimeouts)
	case err != nil && isTimeout(err):
		if h[i].Load() < downAfterTimeouts { // racy, harmlessly: it only has to reach the bar
			h[i].Add(1)
		}
	default: // an answer, even an error reply: the server is up
		h[i].Store(0)
	}
}

// isConnectionFailure reports whether err means the instance could not be reached at all:
// neither an error reply from a live server (WRONGTYPE, NOSCRIPT...) nor a timeout.
func isConnectionFailure(err error) bool {
	var reply redis.Error
	return err != nil && !errors.As(err, &reply) && !isTimeout(err)
}

// isTimeout reports whether err is a deadline or timeout: the instance may just be slow.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

func (h instanceHealth) isDown(i int) bool { return h[i].Load() >= downAfterTimeouts }

// onlyDownLeft reports whether every instance that has not answered is known to be down, so
// that waiting for them until the timeout would only delay the outcome (a split vote with an
// instance dead would otherwise cost every attempt the full instance timeout).
func (s *redlockStore) onlyDownLeft(answered func(i int) bool) bool {
	for i := range s.clients {
		if !answered(i) && !s.health.isDown(i) {
			return false
		}
	}
	return true
}

// quorumError is an operation that could not be decided because too few instances answered:
// ErrBackend with every instance's error (and the context's, if it ended).
func (s *redlockStore) quorumError(op, key string, confirmed int, asked []int, got []instanceReply[int64], timeout time.Duration, ctxErr error) error {
	var errs []error
	for _, r := range got {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.instanceName(r.index), r.err))
		}
	}
	errs = append(errs, s.silentErrors(asked, answeredIn(got), timeout)...)
	if ctxErr != nil {
		errs = append(errs, ctxErr)
	}
	return fmt.Errorf("%w: redlock: %s %q: decided on %d of %d instances, quorum is %d: %w",
		ErrBackend, op, key, confirmed, len(s.clients), s.quorum, joinOneLine(errs))
}

// answeredIn reports which instances have an answer in got.
func answeredIn[T any](got []instanceReply[T]) func(i int) bool {
	return func(i int) bool {
		return slices.ContainsFunc(got, func(r instanceReply[T]) bool { return r.index == i })
	}
}
