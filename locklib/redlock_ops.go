package locklib

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
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
		return s.releaseOn(ctx, i, h, protocol.RedlockReleasedChannel, true)
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
		s.publish(redlockHolderEvent(EventReleased, h.key, h.match))
		return nil
	case lostBefore:
		return fmt.Errorf("%w: redlock: %q was still held on %d of %d instances, quorum is %d",
			ErrNotHeld, h.key, released, n, s.quorum)
	}
	return s.quorumError("release", h.key, released, targets, got, timeout, ctxErr)
}

// releaseOn runs the release script on instance i: -1 not held, -2 a copy of this release
// ran already, 0 deleted, else the re-entry levels left. A deleted key is announced on
// channel, unless it is "". record says whether the release ends h's operation (false for
// the undo of one attempt, after which the Obtain goes on).
func (s *redlockStore) releaseOn(ctx context.Context, i int, h hold, channel string, record bool) (int64, error) {
	reentrant, rec := "0", "0"
	if h.reentrant {
		reentrant = "1"
	}
	if record {
		rec = "1"
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
			return scriptRefresh.Run(ctx, s.clients[i], []string{key, protocol.LevelsKey(key)}, h.match, h.level(), ttl.Milliseconds(), "").Int64()
		},
		func(got []instanceReply[int64]) bool {
			extended, refused := tally(got)
			return extended >= s.quorum || refused > n-s.quorum || s.onlyDownLeft(answeredIn(got))
		})
	extended, refused := tally(got)
	switch {
	case extended >= s.quorum && time.Now().Before(validUntil):
		e := redlockHolderEvent(EventRenewed, key, h.match)
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
