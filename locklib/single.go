package locklib

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// singleStore keeps locks on one Redis server (or one Redis Cluster: every script touches
// only keys of one hash slot). All writes are Lua scripts, so each step is atomic.
type singleStore struct {
	rdb      redis.UniversalClient
	cluster  bool // keys are checked for their companions' slot (checkClusterKey)
	events   bool
	window   time.Duration // presence window of queue entries (presenceWindow)
	clientID string        // the Client's id, to wake its own waiters without pub/sub
	hub      *wakeHub
}

func newSingleStore(rdb redis.UniversalClient) *singleStore {
	_, cluster := rdb.(*redis.ClusterClient)
	return &singleStore{rdb: rdb, cluster: cluster, hub: newWakeHub(rdb)}
}

// setup passes the Client's settings that the scripts need.
func (s *singleStore) setup(cfg config, clientID string) {
	s.events, s.window, s.clientID = cfg.events, presenceWindow(cfg.backoffCap), clientID
}

// fenceLifetime is how long a fencing counter outlives its last acquisition. It may expire:
// the next token is floored by the server clock, so it is still above every earlier one.
func fenceLifetime(ttl time.Duration) time.Duration {
	if ttl > math.MaxInt64/10 {
		return ttl
	}
	return max(10*ttl, 24*time.Hour)
}

// presenceWindow is how long a waiter's queue entry stays valid without a new attempt. A
// live waiter attempts at least every back-off cap; a crashed one blocks the queue for at
// most this long.
func presenceWindow(cfgCap time.Duration) time.Duration { return 3*cfgCap + time.Second }

func (s *singleStore) acquire(ctx context.Context, req acquireRequest) (acquireResult, error) {
	if err := s.checkKey(req.key); err != nil {
		return acquireResult{}, err
	}
	value := req.value
	rand := ""
	if req.reentrant {
		value.Count, rand = 1, value.Rand
	}
	v := value.String()
	var entry string // this waiter's queue entry
	if req.waiterID != "" {
		if g, ok := s.hub.takeGrant(req.waiterID); ok {
			return acquireResult{acquired: true, value: g.value, count: value.Count, token: g.token,
				validUntil: g.validUntil, waiters: g.waiters, position: -1}, nil
		}
		if req.wake != nil {
			s.hub.bind(req.wake, req.waiterID)
		}
		entry = queueEntry(req.waiterID, req.ttl, v)
	}
	var acquiredEvent, waitingEvent string
	if s.events {
		now := time.Now().UnixMilli()
		acquiredEvent = eventPrefix(Event{Type: EventAcquired, Key: req.key, Node: value.Node, // the script adds the value it wrote
			Trace: value.Trace, TTLMs: req.ttl.Milliseconds(), WaitMs: req.waited.Milliseconds(), AtMs: now})
		if req.waiterID != "" {
			waitingEvent = eventPrefix(Event{Type: EventWaiting, Key: req.key, Node: value.Node, Trace: value.Trace, AtMs: now})
		}
	}
	keys := []string{req.key, FenceKey(req.key), WaitQueueKey(req.key), WaitPresenceKey(req.key)}
	reply, err := scriptAcquire.Run(ctx, s.rdb, keys, v, req.ttl.Milliseconds(), rand, entry,
		s.window.Milliseconds(), fenceLifetime(req.ttl).Milliseconds(),
		acquiredEvent, waitingEvent).Slice()
	if err != nil {
		return acquireResult{}, backendError("acquire", req.key, err)
	}
	if len(reply) < 5 {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: unexpected reply %v", ErrBackend, req.key, reply)
	}
	acquired, _ := reply[0].(int64)
	stored, _ := reply[1].(string)
	tokenText, _ := reply[2].(string)
	waiters, _ := reply[3].(int64)
	pttl, _ := reply[4].(int64)
	res := acquireResult{acquired: acquired == 1, value: stored, waiters: waiters, position: -1}
	if len(reply) > 5 {
		res.position, _ = reply[5].(int64)
	}
	if !res.acquired {
		if pttl > 0 {
			res.holderTTL = time.Duration(pttl) * time.Millisecond
		} else if pttl == -1 {
			res.holderTTL = -1
		}
		if req.waiterID != "" {
			s.hub.start(WakeChannelPrefix + clientOf(req.waiterID))
		}
		return res, nil
	}
	if req.waiterID != "" {
		s.hub.takeGrant(req.waiterID) // a hand-off that raced this attempt is the same lock
	}
	if res.token, err = strconv.ParseInt(tokenText, 10, 64); err != nil {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: bad token %q", ErrBackend, req.key, tokenText)
	}
	if req.reentrant {
		if parsed, err := ParseValue(stored); err == nil {
			res.count = parsed.Count
		}
	}
	res.validUntil = req.start.Add(time.Duration(pttl) * time.Millisecond)
	return res, nil
}

// clientOf is the client id part of a waiter id "<client id>:<n>".
func clientOf(waiterID string) string {
	id, _, _ := strings.Cut(waiterID, ":")
	return id
}

// queueEntry is a waiter's member in the wait queue: "<waiter id>|<ttl ms>|<value>", so a
// release by the same client can write the lock for it (docs/value-format.md).
func queueEntry(waiterID string, ttl time.Duration, value string) string {
	return waiterID + "|" + strconv.FormatInt(ttl.Milliseconds(), 10) + "|" + value
}

// parseQueueEntry splits a queue entry; ok is false for anything else.
func parseQueueEntry(entry string) (waiterID string, ttl time.Duration, value string, ok bool) {
	waiterID, rest, ok1 := strings.Cut(entry, "|")
	ttlText, value, ok2 := strings.Cut(rest, "|")
	ms, err := strconv.ParseInt(ttlText, 10, 64)
	if !ok1 || !ok2 || err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return "", 0, "", false
	}
	return waiterID, time.Duration(ms) * time.Millisecond, value, true
}

func (s *singleStore) refresh(ctx context.Context, key, value string, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	var renewedEvent string
	if s.events {
		renewedEvent = s.holderEvent(EventRenewed, key, value)
	}
	pttl, err := scriptRefresh.Run(ctx, s.rdb, []string{key}, value, ttl.Milliseconds(), renewedEvent).Int64()
	if err != nil {
		return time.Time{}, backendError("refresh", key, err)
	}
	switch {
	case pttl == -3:
		return time.Time{}, fmt.Errorf("%w: %q is gone or held by another owner", ErrNotHeld, key)
	case pttl < 0:
		return time.Time{}, fmt.Errorf("%w: refresh %q: unexpected PTTL %d", ErrBackend, key, pttl)
	}
	return start.Add(time.Duration(pttl) * time.Millisecond), nil
}

func (s *singleStore) release(ctx context.Context, key, value string, reentrant bool) (releaseResult, error) {
	var releasedEvent string
	if s.events {
		releasedEvent = s.holderEvent(EventReleased, key, value)
	}
	flag := "0"
	if reentrant {
		flag = "1"
	}
	keys := []string{key, FenceKey(key), WaitQueueKey(key), WaitPresenceKey(key)}
	sent := time.Now()
	reply, err := scriptRelease.Run(ctx, s.rdb, keys, value, flag, releasedEvent, s.clientID).Slice()
	if err != nil {
		return releaseResult{}, backendError("release", key, err)
	}
	if len(reply) != 6 {
		return releaseResult{}, fmt.Errorf("%w: release %q: unexpected reply %v", ErrBackend, key, reply)
	}
	status, _ := reply[0].(int64)
	levels, _ := reply[1].(int64)
	waiters, _ := reply[2].(int64)
	handedTo, _ := reply[3].(string)
	tokenText, _ := reply[4].(string)
	written, _ := reply[5].(string)
	if status < 0 {
		return releaseResult{}, fmt.Errorf("%w: %q is gone or held by another owner", ErrNotHeld, key)
	}
	if handedTo != "" {
		s.handOver(key, handedTo, written, tokenText, waiters, sent)
	}
	return releaseResult{deleted: status == 1, count: int(levels)}, nil
}

// handOver passes a lock that the release script wrote for one of this client's waiters to
// that waiter. Its validity runs from the release's send time: the hand-off came later.
func (s *singleStore) handOver(key, entry, written, tokenText string, waiters int64, sent time.Time) {
	waiterID, ttl, _, ok := parseQueueEntry(entry)
	token, err := strconv.ParseInt(tokenText, 10, 64)
	if !ok || err != nil || written == "" {
		return // not ours to decode: the waiter finds its value in the key on its next poll
	}
	s.hub.handOver(waiterID, grant{key: key, value: written, token: token, validUntil: sent.Add(ttl), waiters: waiters})
}

func (s *singleStore) pttl(ctx context.Context, key, value string) (time.Duration, error) {
	pttl, err := scriptPTTL.Run(ctx, s.rdb, []string{key}, value).Int64()
	if err != nil {
		return 0, backendError("pttl", key, err)
	}
	switch {
	case pttl == -3:
		return 0, nil
	case pttl < 0:
		return -1, nil // no expiry
	}
	return time.Duration(pttl) * time.Millisecond, nil
}

func (s *singleStore) leave(ctx context.Context, req acquireRequest) error {
	s.hub.takeGrant(req.waiterID) // a hand-off it will not take: leave.lua releases it
	value := req.value
	if req.reentrant {
		value.Count = 1
	}
	keys := []string{req.key, WaitQueueKey(req.key), WaitPresenceKey(req.key)}
	if err := scriptLeave.Run(ctx, s.rdb, keys, queueEntry(req.waiterID, req.ttl, value.String())).Err(); err != nil {
		return backendError("leave queue", req.key, err)
	}
	return nil
}

func (s *singleStore) wakeups(key string) (<-chan struct{}, func()) { return s.hub.register(key) }

func (s *singleStore) fenced() bool { return true }

func (s *singleStore) close() error { return s.hub.close() }

func (s *singleStore) publishEvent(ctx context.Context, payload []byte) error {
	return s.rdb.Publish(ctx, EventsChannel, payload).Err()
}

// holderEvent is the JSON prefix of an event about the holder of value (released, renewed).
func (s *singleStore) holderEvent(t EventType, key, value string) string {
	e := Event{Type: t, Key: key, Value: value, AtMs: time.Now().UnixMilli()}
	if v, err := ParseValue(value); err == nil {
		e.Node, e.Trace = v.Node, v.Trace
		if t == EventReleased {
			e.HoldMs = time.Since(v.AcquiredAt).Milliseconds()
		}
	}
	return eventPrefix(e)
}

// checkKey refuses, in Redis Cluster, a key whose companion keys would land in another
// slot: a key without a valid hash tag that contains '}' (docs/value-format.md).
func (s *singleStore) checkKey(key string) error {
	if s.cluster {
		return checkClusterKey(key)
	}
	return nil
}

func checkClusterKey(key string) error {
	if !hasHashTag(key) && strings.Contains(key, "}") {
		return fmt.Errorf("%w: key %q contains '}' without a valid hash tag, so its fence and queue keys "+
			"would be in another cluster slot; use a key with a hash tag such as lock:{order:1001}", ErrInvalid, key)
	}
	return nil
}
