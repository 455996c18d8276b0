package locklib

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

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
