package locklib

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

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
func (s *redlockStore) release(ctx context.Context, key, value string, reentrant bool) (releaseResult, error) {
	n := len(s.clients)
	targets := s.allInstances()
	undoing := 0 // instances whose acquire answer is still out: that answer deletes our key
	if !reentrant {
		targets = slices.DeleteFunc(targets, s.giveUp(key, value))
		undoing = n - len(targets)
	}
	tally := func(got []instanceReply[int64]) (released, notHeld, left int) {
		for _, r := range got {
			switch {
			case r.err != nil:
			case r.val < 0:
				notHeld++
			default:
				released++
				left = max(left, int(r.val))
			}
		}
		return released, notHeld, left
	}
	timeout := s.instanceTimeout(0)
	got, ctxErr := fanOut(ctx, s, targets, timeout, func(ctx context.Context, i int) (int64, error) {
		return s.releaseOn(ctx, i, key, value, reentrant, RedlockReleasedChannel)
	}, func(got []instanceReply[int64]) bool {
		released, notHeld, _ := tally(got)
		return !reentrant && released >= s.quorum || notHeld > n-s.quorum || s.onlyDownLeft(func(i int) bool {
			return answeredIn(got)(i) || !slices.Contains(targets, i)
		})
	})
	released, notHeld, left := tally(got)
	lostBefore := notHeld > n-s.quorum
	switch {
	case released >= s.quorum || !lostBefore && released > 0 && released+notHeld+undoing >= s.quorum:
		s.publish(redlockHolderEvent(EventReleased, key, value))
		return releaseResult{deleted: left == 0, count: left}, nil
	case lostBefore:
		return releaseResult{}, fmt.Errorf("%w: redlock: %q was still held on %d of %d instances, quorum is %d",
			ErrNotHeld, key, released, n, s.quorum)
	}
	return releaseResult{}, s.quorumError("release", key, released, targets, got, timeout, ctxErr)
}

// releaseOn runs the release script on instance i: -1 not held, 0 deleted, else the
// re-entry levels left. match is the value, or its base for a re-entrant lock. A deleted key
// is announced on channel, unless it is "".
func (s *redlockStore) releaseOn(ctx context.Context, i int, key, match string, reentrant bool, channel string) (int64, error) {
	flag := "0"
	if reentrant {
		flag = "1"
	}
	return scriptRedlockRelease.Run(ctx, s.clients[i], []string{key}, match, flag, channel).Int64()
}

// refresh extends the lock to ttl on every instance in parallel (refresh.lua). It succeeds
// with a quorum extended within the new validity, start + ttl - drift; ErrNotHeld when so
// many instances no longer have our value that no quorum is possible. It returns as soon as
// the outcome is settled; a slow instance's extension finishes in the background.
func (s *redlockStore) refresh(ctx context.Context, key, value string, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	if err := validate(key, ttl); err != nil {
		return time.Time{}, err
	}
	validUntil, err := s.validity(start, ttl)
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
			return scriptRefresh.Run(ctx, s.clients[i], []string{key}, value, ttl.Milliseconds(), "").Int64()
		},
		func(got []instanceReply[int64]) bool {
			extended, refused := tally(got)
			return extended >= s.quorum || refused > n-s.quorum || s.onlyDownLeft(answeredIn(got))
		})
	extended, refused := tally(got)
	switch {
	case extended >= s.quorum && time.Now().Before(validUntil):
		e := redlockHolderEvent(EventRenewed, key, value)
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
func (s *redlockStore) pttl(ctx context.Context, key, value string) (time.Duration, error) {
	timeout := s.instanceTimeout(0)
	got, ctxErr := fanOut(ctx, s, s.allInstances(), timeout,
		func(ctx context.Context, i int) (int64, error) {
			return scriptPTTL.Run(ctx, s.clients[i], []string{key}, value).Int64()
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
		ErrBackend, op, key, confirmed, len(s.clients), s.quorum, errors.Join(errs...))
}

// answeredIn reports which instances have an answer in got.
func answeredIn[T any](got []instanceReply[T]) func(i int) bool {
	return func(i int) bool {
		return slices.ContainsFunc(got, func(r instanceReply[T]) bool { return r.index == i })
	}
}

// valueBase is a lock value without its re-entry count.
func valueBase(value string) string {
	if v, err := ParseValue(value); err == nil && v.Count > 0 {
		return value[:strings.LastIndexByte(value, ':')]
	}
	return value
}
