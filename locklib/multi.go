package locklib

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// A multi-key lock (docs/locklib.md, "Multi-key locks"; docs/value-format.md) takes every key
// of a set at once, in one script, or none: there is no moment at which it holds some keys
// and waits for others, so two overlapping sets cannot deadlock. Each key becomes an
// ordinary lock string, all with the same value, and every key's fence counter the same
// token. It never queues in a key's FIFO queue (a set queued at the head of one key while
// waiting for another would be hold-and-wait again), and never jumps one: it takes the keys
// only when each is free and has no live waiter, and otherwise polls with back-off.

// ErrCrossSlot: the keys of a multi-key lock are in different Redis Cluster hash slots (or,
// on a redis.Ring, have different hash tags), so no one script can take them. It wraps
// ErrInvalid; the message names two of the keys, their slots, and how to hash-tag them.
var ErrCrossSlot = fmt.Errorf("%w: keys in different Redis Cluster hash slots", ErrInvalid)

// ObtainMulti takes every one of keys for ttl, or none, waiting until it holds them all, the
// context ends (ErrNotObtained wrapping ctx.Err()) or the backend fails (ErrBackend). The
// Lock covers all the keys: Token is valid for each (every key's fence counter is set to
// it), and Release, Refresh, TTL and the watchdog act on all of them at once. It waits by
// polling with back-off (woken early when this Client releases one of the keys), never
// ahead of the waiters queued on any key: it is not FIFO, and a steady stream of single-key
// Obtains on its keys can starve it. Keys must be distinct, and on Redis Cluster share one
// hash slot (ErrCrossSlot); Reentrant is refused (ErrInvalid).
func (c *Client) ObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtainMulti(ctx, "ObtainMulti", keys, ttl, true, opts)
}

// TryObtainMulti makes one attempt at ObtainMulti: ErrNotObtained when a key is held, or
// free with waiters queued on it.
func (c *Client) TryObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtainMulti(ctx, "TryObtainMulti", keys, ttl, false, opts)
}

func (c *Client) obtainMulti(ctx context.Context, name string, keys []string, ttl time.Duration, wait bool, opts []LockOption) (*Lock, error) {
	if err := checkKeySet(name, keys); err != nil {
		return nil, err
	}
	set := slices.Clone(keys)
	return c.obtain(ctx, obtainCall{name: name, kind: kindMulti, key: set[0], ttl: ttl, wait: wait,
		check: func(_ string, lc lockConfig) error {
			if lc.reentrant {
				return fmt.Errorf("%w: %s: a multi-key lock is not re-entrant (Reentrant)", ErrInvalid, name)
			}
			if s, ok := c.store.(*singleStore); ok {
				return s.checkSlots(set)
			}
			return nil // Redlock refuses the kind
		},
		prepare: func(req *acquireRequest) { req.set = set },
	}, opts)
}

// checkKeySet refuses an empty set, an empty key and a key named twice.
func checkKeySet(name string, keys []string) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: %s: no keys", ErrInvalid, name)
	}
	seen := make(map[string]struct{}, len(keys))
	for _, key := range keys {
		if key == "" {
			return fmt.Errorf("%w: %s: empty key", ErrInvalid, name)
		}
		if _, twice := seen[key]; twice {
			return fmt.Errorf("%w: %s: key %q is named twice", ErrInvalid, name, key)
		}
		seen[key] = struct{}{}
	}
	return nil
}

// checkSlots refuses, before anything is sent, a set of keys that one script cannot touch:
// on Redis Cluster keys in two slots (or a key whose companions are in another slot), on a
// redis.Ring keys with two hash tags (it shards by the tag).
func (s *singleStore) checkSlots(keys []string) error {
	switch s.rdb.(type) {
	case *redis.ClusterClient:
		for _, key := range keys {
			if err := checkClusterKey(key); err != nil {
				return err
			}
		}
		first := protocol.Slot(keys[0])
		for _, key := range keys[1:] {
			if slot := protocol.Slot(key); slot != first {
				return fmt.Errorf("%w: %q is in slot %d and %q in slot %d; %s", ErrCrossSlot, keys[0], first, key, slot, hashTagAdvice)
			}
		}
	case *redis.Ring:
		first := protocol.HashTag(keys[0])
		for _, key := range keys[1:] {
			if tag := protocol.HashTag(key); tag != first {
				return fmt.Errorf("%w: on a redis.Ring %q is sharded by %q and %q by %q; %s", ErrCrossSlot, keys[0], first, key, tag, hashTagAdvice)
			}
		}
	}
	return nil
}

const hashTagAdvice = "a multi-key lock takes its keys in one script, so they must share a slot: " +
	"hash-tag the part that names the set, as lock:{order-1001}:payment and lock:{order-1001}:stock"

// multiKeys are the script keys of a multi-key lock: each key's lockKeys, in order.
func multiKeys(set []string) []any {
	keys := make([]any, 0, 6*len(set))
	for _, key := range set {
		keys = append(keys, lockKeys(key)...)
	}
	return keys
}

// setName names the keys of a multi-key lock in a message: the first few, and how many more.
func setName(set []string) string {
	const named = 3
	var quoted []string
	for _, key := range set[:min(len(set), named)] {
		quoted = append(quoted, strconv.Quote(key))
	}
	if len(set) > named {
		quoted = append(quoted, fmt.Sprintf("%d more", len(set)-named))
	}
	return "multi-key lock on " + strings.Join(quoted, ", ")
}

// setEvents are one event prefix per key of set: e with that key and "mode":"multi" (a
// multi-key lock's events are published per key, with the shared value); "" each when
// events are off.
func setEvents(set []string, e protocol.Event, on bool) []any {
	out := make([]any, len(set))
	for i, key := range set {
		out[i] = ""
		if on {
			e.Key, e.Mode = key, kindMulti.eventMode()
			out[i] = eventPrefix(e)
		}
	}
	return out
}

// holderEvents are setEvents about h's holder (released, renewed).
func holderEvents(t EventType, h hold, on bool) []any {
	e := holderEvent(t, h.key, h.match)
	e.AtMs = time.Now().UnixMilli()
	return setEvents(h.set, e, on)
}

// acquireMulti is one attempt to take every key of req.set (multi_acquire.lua).
func (s *singleStore) acquireMulti(ctx context.Context, req acquireRequest) (acquireResult, error) {
	v := req.value.String()
	beforeStamp, afterStamp, _ := protocol.AroundStamp(v)
	args := append([]any{v, req.ttl.Milliseconds(), req.op, fenceLifetime(req.ttl, s.fenceFor).Milliseconds(), beforeStamp, afterStamp},
		setEvents(req.set, protocol.Event{Type: string(EventAcquired), Node: req.value.Node, Trace: req.value.Trace,
			TTLMs: req.ttl.Milliseconds(), WaitMs: req.waited.Milliseconds(), AtMs: time.Now().UnixMilli()}, s.events)...)
	keys := multiKeys(req.set)
	reply, err := run(ctx, s, scriptMultiAcquire, keys, args, cmdSlice, s.lateAcquire(ctx, req))
	if err != nil {
		return acquireResult{}, backendError("acquire", req.key, err)
	}
	if len(reply) != 6 {
		return acquireResult{}, fmt.Errorf("%w: acquire %s: unexpected reply %v", ErrBackend, setName(req.set), reply)
	}
	status, _ := reply[0].(int64)
	stored, _ := reply[1].(string)
	tokenText, _ := reply[2].(string)
	waiters, _ := reply[3].(int64)
	pttl, _ := reply[4].(int64)
	blocking, _ := reply[5].(int64)
	switch {
	case status == -2:
		return acquireResult{}, fmt.Errorf("%w: acquire %s: the server reports this Obtain as ended", ErrBackend, setName(req.set))
	case status != 1:
		res := acquireResult{value: stored, waiters: waiters, position: -1, holderTTL: time.Duration(pttl) * time.Millisecond}
		if blocking >= 1 && int(blocking) <= len(req.set) {
			res.blocking = req.set[blocking-1]
		}
		return res, nil
	}
	token, err := strconv.ParseInt(tokenText, 10, 64)
	if err != nil {
		return acquireResult{}, fmt.Errorf("%w: acquire %s: bad token %q", ErrBackend, setName(req.set), tokenText)
	}
	if pttl < 0 {
		return acquireResult{}, fmt.Errorf("%w: acquire %s: a key has no expiry (PTTL %d)", ErrBackend, setName(req.set), pttl)
	}
	return acquireResult{acquired: true, value: stored, level: req.op, token: token, waiters: waiters, position: -1, keys: keys,
		validUntil: req.start.Add(time.Duration(pttl) * time.Millisecond)}, nil
}

// releaseMulti deletes every key of h that still holds its value (multi_release.lua), and
// wakes this Client's multi-key waiters on them.
func (s *singleStore) releaseMulti(ctx context.Context, h hold) error {
	args := append([]any{h.match, h.op}, holderEvents(EventReleased, h, s.events)...)
	reply, err := runReleasing(ctx, s, scriptMultiRelease, h.keys, args, cmdSlice)
	if err != nil {
		return backendError("release", h.key, err)
	}
	if len(reply) != 2 {
		return fmt.Errorf("%w: release %s: unexpected reply %v", ErrBackend, setName(h.set), reply)
	}
	status, _ := reply[0].(int64)
	gone, _ := reply[1].(int64)
	s.hub.freed(h.set)
	switch {
	case status == -1:
		return fmt.Errorf("%w: %s: no key holds it any more", ErrNotHeld, setName(h.set))
	case status == -3 && gone >= 1 && int(gone) <= len(h.set):
		return fmt.Errorf("%w: %s: %q was gone or held by another owner (the other keys are released)", ErrNotHeld, setName(h.set), h.set[gone-1])
	case status < 0:
		return fmt.Errorf("%w: release %s: unexpected reply %v", ErrBackend, setName(h.set), reply)
	}
	return nil
}

// leaveMulti cleans up after an ObtainMulti that gave up (multi_leave.lua): its value on any
// key one of its requests took. Safe to repeat, so it is sent again when a broken connection
// lost it.
func (s *singleStore) leaveMulti(ctx context.Context, req acquireRequest) error {
	keys, args := multiKeys(req.set), []any{req.op, req.value.String()}
	return retrying(ctx, func(ctx context.Context) error {
		if _, err := runReleasing(ctx, s, scriptMultiLeave, keys, args, cmdInt64); err != nil {
			return backendError("leave", req.key, err)
		}
		return nil
	})
}

// Keys is every key the Lock holds: the keys of a multi-key lock in the order they were
// given, or the one key of any other lock.
func (l *Lock) Keys() []string {
	if l.h.set != nil {
		return slices.Clone(l.h.set)
	}
	return []string{l.h.key}
}

// errNotHeld is the ErrNotHeld of a Refresh or renewal that found h's lock gone.
func (h hold) errNotHeld() error {
	if h.set != nil {
		return fmt.Errorf("%w: %s: a key is gone or held by another owner", ErrNotHeld, setName(h.set))
	}
	return fmt.Errorf("%w: %q is gone or held by another owner", ErrNotHeld, h.key)
}
