package locklib

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// singleStore keeps locks on one Redis server (or one Redis Cluster: every script touches
// only keys of one hash slot). All writes are Lua scripts, so each step is atomic.
type singleStore struct {
	rdb      redis.UniversalClient
	cluster  bool // keys are checked for their companions' slot (checkClusterKey)
	direct   bool // the client bounds reads by the context itself (boundsSocket)
	events   bool
	window   time.Duration // presence window of queue entries (presenceWindow)
	clientID string        // the Client's id, to wake its own waiters without pub/sub
	// windowArg and clientIDArg are window in ms and clientID as script arguments, boxed once.
	windowArg, clientIDArg any
	fenceFor               time.Duration // WithFenceRetention
	// replicas and replicaTimeout are WithReplicas'; replicasErr refuses it where WAIT cannot
	// be sent on the connection that wrote (a redis.Ring).
	replicas       int
	replicaTimeout time.Duration
	replicasErr    error
	scripts        *scriptRunner
	// releasing sends the calls bounded by releaseTimeout (a release, a clean-up) on a clone
	// of a client that does not bound reads by the context (boundsSocket), whose reads and
	// writes are bounded by the context: they need no goroutine of their own (callBounded).
	// nil when the client bounds reads itself, or cannot be cloned so (a cluster client).
	releasing *scriptRunner
	hub       *wakeHub
	calls     goTracker // requests still running after their caller gave up on them
}

func newSingleStore(rdb redis.UniversalClient) *singleStore {
	_, cluster := rdb.(*redis.ClusterClient)
	s := &singleStore{rdb: rdb, cluster: cluster, direct: boundsSocket(rdb), scripts: newScriptRunner(rdb), hub: newWakeHub(rdb)}
	if c, ok := rdb.(*redis.Client); ok && !s.direct {
		// The clone's options are its own (WithTimeout copies them): its reads end with the
		// context, so every try of go-redis's gets what is left of releaseTimeout, not a
		// fixed share of it that a distant or busy server would exceed.
		releasing := c.WithTimeout(releaseTimeout)
		releasing.Options().ContextTimeoutEnabled = true
		s.releasing = s.scripts.via(releasing)
	}
	return s
}

// setup passes the Client's settings that the scripts need.
func (s *singleStore) setup(cfg config, clientID string) {
	s.events, s.window, s.clientID, s.fenceFor = cfg.events, presenceWindow(cfg.backoffCap), clientID, cfg.fenceRetention
	s.windowArg, s.clientIDArg = s.window.Milliseconds(), clientID
	s.replicas, s.replicaTimeout = cfg.replicas, cfg.replicaTimeout
	switch s.rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		if s.replicas > 0 {
			s.replicasErr = fmt.Errorf("%w: WithReplicas needs a *redis.Client or a *redis.ClusterClient, "+
				"whose connection to the key's master can send WAIT after the lock's write; not a %T", ErrInvalid, s.rdb)
		}
	}
}

// fenceLifetime is how long a fencing counter outlives an acquisition with ttl: as long as the
// lock would, or the retention asked for (WithFenceRetention). Once it has gone the next
// token is the server clock's, still above every earlier one unless the clock stepped back
// (docs/value-format.md, "Fencing tokens").
func fenceLifetime(ttl, retention time.Duration) time.Duration { return max(ttl, retention) }

// presenceWindow is how long a waiter's queue entry stays valid without a new attempt. A
// live waiter attempts at least every back-off cap; a crashed one blocks the queue for at
// most this long.
func presenceWindow(cfgCap time.Duration) time.Duration { return 3*cfgCap + time.Second }

// lockKeys are the lock key and its companions, in the order the acquire and release scripts
// take them, as command arguments (scriptRunner.run).
func lockKeys(key string) []any {
	c := protocol.CompanionKeys(key)
	return []any{key, c[protocol.Fence-1], c[protocol.WaitQueue-1], c[protocol.WaitPresence-1], c[protocol.Levels-1], c[protocol.Ended-1]}
}

// run sends a script, bounded by ctx whatever the client's options (callBounded); late, if
// not nil, gets the reply of a script still running when ctx ended.
func run[T any](ctx context.Context, s *singleStore, script *serverScript, keys, args []any,
	result func(*redis.Cmd) (T, error), late func(T, error),
) (T, error) {
	return callBounded(ctx, &s.calls, s.direct, func(ctx context.Context) (T, error) {
		return result(s.scripts.run(ctx, script, keys, args...))
	}, late)
}

// runReleasing is run for a call bounded by releaseTimeout (a release, a clean-up): direct
// where the store has a client for them (releasing).
func runReleasing[T any](ctx context.Context, s *singleStore, script *serverScript, keys, args []any,
	result func(*redis.Cmd) (T, error),
) (T, error) {
	if s.releasing != nil {
		return result(s.releasing.run(ctx, script, keys, args...))
	}
	return run(ctx, s, script, keys, args, result, nil)
}

func cmdSlice(c *redis.Cmd) ([]any, error) { return c.Slice() }
func cmdInt64(c *redis.Cmd) (int64, error) { return c.Int64() }

func (s *singleStore) acquire(ctx context.Context, req acquireRequest) (acquireResult, error) {
	res, err := s.acquireOnce(ctx, req)
	if err != nil || !res.acquired || s.replicas == 0 {
		return res, err
	}
	// A lock that fewer replicas confirm is given up by the Obtain (giveUp: leave.lua deletes
	// it, owner-checked), whose error is then ErrNotObtained and ErrNotReplicated.
	if _, err := s.replicated(ctx, req.hold(res), time.Millisecond, ""); err != nil {
		switch {
		case errors.Is(err, ErrNotReplicated):
			return acquireResult{}, fmt.Errorf("%w: %w", ErrNotObtained, err)
		case errors.Is(err, ErrNotHeld): // a ttl shorter than the way to the confirmation
			return acquireResult{}, fmt.Errorf("%w: %q ran out before its replicas could confirm it", ErrNotObtained, req.key)
		}
		return acquireResult{}, err
	}
	return res, nil
}

// acquireOnce makes one attempt with the acquire script of req's kind.
func (s *singleStore) acquireOnce(ctx context.Context, req acquireRequest) (acquireResult, error) {
	if err := s.checkKey(req.key); err != nil {
		return acquireResult{}, err
	}
	if s.replicasErr != nil {
		return acquireResult{}, s.replicasErr
	}
	switch req.kind {
	case kindPermit:
		return s.acquirePermit(ctx, req)
	case kindMulti:
		return s.acquireMulti(ctx, req)
	case kindRead, kindWrite:
		return s.acquireRW(ctx, req)
	}
	return s.acquireLock(ctx, req)
}

// acquireLock is one attempt to take a plain or re-entrant lock (acquire.lua).
func (s *singleStore) acquireLock(ctx context.Context, req acquireRequest) (acquireResult, error) {
	value := req.value
	rand := ""
	if req.reentrant {
		value.Count, rand = 1, value.Rand
	}
	v := value.String()
	var entry string // this waiter's queue entry
	if req.queue {
		if g, ok := s.hub.takeGrant(req.op); ok {
			return acquireResult{acquired: true, value: g.value, level: req.op, token: g.token,
				validUntil: g.validUntil, waiters: g.waiters, position: -1}, nil
		}
		if req.wake != nil {
			s.hub.bind(req.wake, req.op)
		}
		entry = protocol.QueueEntry(req.op, req.ttl, v)
	}
	var acquiredEvent, waitingEvent string
	if s.events {
		now := time.Now().UnixMilli()
		acquiredEvent = eventPrefix(protocol.Event{Type: string(EventAcquired), Key: req.key, Node: value.Node, // the script adds the value it wrote
			Trace: value.Trace, TTLMs: req.ttl.Milliseconds(), WaitMs: req.waited.Milliseconds(), AtMs: now})
		if req.queue {
			waitingEvent = eventPrefix(protocol.Event{Type: string(EventWaiting), Key: req.key, Node: value.Node, Trace: value.Trace, AtMs: now})
		}
	}
	beforeStamp, afterStamp, _ := protocol.AroundStamp(v)
	var ttlArg, fenceArg any = req.ttl.Milliseconds(), fenceLifetime(req.ttl, s.fenceFor).Milliseconds()
	if fenceArg == ttlArg {
		fenceArg = ttlArg // the same number (no retention asked for): boxed once
	}
	args := []any{v, ttlArg, rand, req.op, entry, s.windowArg, fenceArg, acquiredEvent, waitingEvent, beforeStamp, afterStamp}
	keys := lockKeys(req.key)
	reply, err := run(ctx, s, scriptAcquire, keys, args, cmdSlice, s.lateAcquire(ctx, req))
	if err != nil {
		return acquireResult{}, backendError("acquire", req.key, err)
	}
	if len(reply) < 5 {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: unexpected reply %v", ErrBackend, req.key, reply)
	}
	status, _ := reply[0].(int64)
	stored, _ := reply[1].(string)
	tokenText, _ := reply[2].(string)
	waiters, _ := reply[3].(int64)
	pttl, _ := reply[4].(int64)
	if status == -2 {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: the server reports this Obtain as ended", ErrBackend, req.key)
	}
	res := acquireResult{acquired: status == 1, value: stored, level: req.op, waiters: waiters, position: -1, keys: keys}
	if len(reply) > 5 {
		res.position, _ = reply[5].(int64)
	}
	if !res.acquired {
		if pttl > 0 {
			res.holderTTL = time.Duration(pttl) * time.Millisecond
		} else if pttl == -1 {
			res.holderTTL = -1
		}
		if req.queue {
			s.hub.start(protocol.WakeChannelPrefix + s.clientID)
		}
		return res, nil
	}
	if req.queue {
		s.hub.takeGrant(req.op) // a hand-off that raced this attempt is the same lock
	}
	if res.token, err = strconv.ParseInt(tokenText, 10, 64); err != nil {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: bad token %q", ErrBackend, req.key, tokenText)
	}
	if pttl < 0 {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: the lock has no expiry (PTTL %d)", ErrBackend, req.key, pttl)
	}
	res.validUntil = req.start.Add(time.Duration(pttl) * time.Millisecond)
	return res, nil
}

// lateAcquire handles the answer of an acquire script that comes after its Obtain gave up
// (nil when the call cannot outlive its context): one that says it took the lock may have
// run after the Obtain's clean-up (abandon), which then runs again.
func (s *singleStore) lateAcquire(ctx context.Context, req acquireRequest) func([]any, error) {
	if !boundedOnGoroutine(ctx, s.direct) {
		return nil
	}
	return func(reply []any, err error) {
		if err == nil && len(reply) > 0 && reply[0] == int64(1) {
			s.cleanUpLater(func(ctx context.Context) error { return s.abandon(ctx, req) })
		}
	}
}

func (s *singleStore) refresh(ctx context.Context, h hold, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	var renewedEvent string
	if s.events {
		renewedEvent = holderEventPrefix(EventRenewed, h.key, h.match)
	}
	if s.replicas > 0 {
		pttl, err := s.replicated(ctx, h, ttl, renewedEvent)
		if err != nil {
			return time.Time{}, err
		}
		return start.Add(time.Duration(pttl) * time.Millisecond), nil
	}
	script, keys, args := refreshScript(h, ttl, renewedEvent, false)
	pttl, err := run(ctx, s, script, keys, args, cmdInt64, nil)
	if err != nil {
		return time.Time{}, backendError("refresh", h.key, err)
	}
	switch {
	case pttl == -3:
		return time.Time{}, h.errNotHeld()
	case pttl < 0:
		return time.Time{}, fmt.Errorf("%w: refresh %q: unexpected PTTL %d", ErrBackend, h.key, pttl)
	}
	return start.Add(time.Duration(pttl) * time.Millisecond), nil
}

// replicated extends h's lock to at least ttl (refresh.lua, made to write the lock even when
// it extends nothing; renewedEvent as refresh's) and then sends WAIT replicas timeout, both on
// one connection of their own to the key's master. WAIT counts the replicas that have the
// offset of its connection's last command (Redis before 7.0: last write): on another
// connection of the pool that is an older offset, or none for a new connection, and WAIT
// answers at once with every replica connected, frozen or not. The write makes the offset
// this script's on every version, and it comes after the lock's in the master's stream
// whichever connection wrote the lock (a hand-off by a release, an acquire script that
// go-redis sent again after a lost reply, which finds the lock taken and writes nothing). A
// redis.Conn never changes connection: when it breaks, the call fails instead of being sent
// again on another one ahead of the WAIT. It returns the PTTL; ErrNotHeld when h does not
// hold the lock; a *ReplicationError when fewer replicas confirmed.
func (s *singleStore) replicated(ctx context.Context, h hold, ttl time.Duration, renewedEvent string) (int64, error) {
	type outcome struct{ pttl, acked int64 }
	out, err := callBounded(ctx, &s.calls, s.direct, func(ctx context.Context) (outcome, error) {
		conn, err := s.masterConn(ctx, h.key)
		if err != nil {
			return outcome{}, err
		}
		defer conn.Close()
		script, keys, args := refreshScript(h, ttl, renewedEvent, true)
		pttl, err := s.scripts.via(conn).run(ctx, script, keys, args...).Int64()
		if err != nil || pttl < 0 {
			return outcome{pttl: pttl}, err
		}
		acked, err := conn.Wait(ctx, s.replicas, s.replicaTimeout).Result()
		return outcome{pttl, acked}, err
	}, nil)
	switch {
	case err != nil:
		if s.cluster {
			s.rdb.(*redis.ClusterClient).ReloadState(ctx) // the slot may have another master now
		}
		return 0, backendError("refresh", h.key, err)
	case out.pttl == -3:
		return 0, h.errNotHeld()
	case out.pttl < 0:
		return 0, fmt.Errorf("%w: refresh %q: unexpected PTTL %d", ErrBackend, h.key, out.pttl)
	case out.acked < int64(s.replicas):
		return 0, &ReplicationError{Key: h.key, Acked: int(out.acked), Wanted: s.replicas, Timeout: s.replicaTimeout}
	}
	return out.pttl, nil
}

// masterConn is a connection of its own to the master that serves key.
func (s *singleStore) masterConn(ctx context.Context, key string) (*redis.Conn, error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return node.Conn(), nil
	case *redis.Client:
		return c.Conn(), nil
	}
	return nil, s.replicasErr
}

// refreshScript is the refresh script of h's kind with its keys and arguments: it extends h
// to live at least ttl more and returns the PTTL, or -3 when h holds nothing. write makes it
// write even when it extends nothing (replicated: the WAIT after it must count this write).
func refreshScript(h hold, ttl time.Duration, renewedEvent string, write bool) (*serverScript, []any, []any) {
	switch {
	case h.kind == kindMulti:
		flag := "0"
		if write {
			flag = "1"
		}
		return scriptMultiRefresh, h.keys, append([]any{h.match, ttl.Milliseconds(), flag}, holderEvents(EventRenewed, h, renewedEvent != "")...)
	case h.kind.leased():
		return scriptLeaseRefresh, []any{h.key, protocol.FenceKey(h.key)}, []any{h.match, ttl.Milliseconds(), renewedEvent}
	}
	args := []any{h.match, h.level(), ttl.Milliseconds(), renewedEvent}
	if write {
		args = append(args, "1")
	}
	return scriptRefresh, []any{h.key, protocol.LevelsKey(h.key), protocol.FenceKey(h.key)}, args
}

// level is what the scripts check in the levels set: the operation id of a re-entrant
// level, "" for a plain lock.
func (h hold) level() string {
	if h.reentrant {
		return h.op
	}
	return ""
}

func (s *singleStore) release(ctx context.Context, h hold) error {
	if h.kind == kindMulti {
		return s.releaseMulti(ctx, h)
	}
	var releasedEvent string
	if s.events {
		releasedEvent = holderEventPrefix(EventReleased, h.key, h.match)
	}
	if h.kind.leased() {
		return s.releaseLease(ctx, h, releasedEvent)
	}
	flag := "0"
	if h.reentrant {
		flag = "1"
	}
	sent := time.Now()
	keys := h.keys
	if keys == nil {
		keys = lockKeys(h.key)
	}
	reply, err := runReleasing(ctx, s, scriptRelease, keys, []any{h.match, h.op, flag, releasedEvent, s.clientIDArg, s.fenceFor.Milliseconds()}, cmdSlice)
	if err != nil {
		return backendError("release", h.key, err)
	}
	if len(reply) != 6 {
		return fmt.Errorf("%w: release %q: unexpected reply %v", ErrBackend, h.key, reply)
	}
	status, _ := reply[0].(int64)
	waiters, _ := reply[2].(int64)
	handedTo, _ := reply[3].(string)
	tokenText, _ := reply[4].(string)
	written, _ := reply[5].(string)
	switch {
	case status < 0:
		return fmt.Errorf("%w: %q is gone or held by another owner", ErrNotHeld, h.key)
	case status == 2:
		// An earlier copy of this release ran, and its answer (a hand-off to one of our
		// waiters, maybe) was lost: the waiters on the key try now instead of at their poll.
		s.hub.signalKey(h.key)
	case handedTo != "":
		s.handOver(h.key, handedTo, written, tokenText, waiters, sent)
	case status == 1:
		s.hub.freed([]string{h.key}) // this Client's multi-key waiters on it try now
	}
	return nil
}

// handOver passes a lock that the release script wrote for one of this client's waiters to
// that waiter. Its validity runs from the release's send time: the hand-off came later. A
// waiter whose Obtain has given up meanwhile is not there to take it: its clean-up runs again.
func (s *singleStore) handOver(key, entry, written, tokenText string, waiters int64, sent time.Time) {
	op, ttl, _, ok := protocol.ParseQueueEntry(entry)
	token, err := strconv.ParseInt(tokenText, 10, 64)
	if !ok || err != nil || written == "" {
		return // not ours to decode: the waiter finds its value in the key on its next poll
	}
	g := grant{value: written, token: token, validUntil: sent.Add(ttl), waiters: waiters}
	if s.hub.handOver(op, g) == handedToAbandoned {
		s.cleanUpLater(func(ctx context.Context) error {
			return s.leave(ctx, key, op, "", written, false)
		})
	}
}

func (s *singleStore) pttl(ctx context.Context, h hold) (time.Duration, error) {
	script, keys, args := scriptPTTL, []any{h.key, protocol.LevelsKey(h.key)}, []any{h.match, h.level()}
	switch {
	case h.kind == kindMulti:
		script, keys, args = scriptMultiPTTL, h.keys, []any{h.match}
	case h.kind.leased():
		script, keys, args = scriptLeasePTTL, []any{h.key}, []any{h.match}
	}
	pttl, err := run(ctx, s, script, keys, args, cmdInt64, nil)
	if err != nil {
		return 0, backendError("pttl", h.key, err)
	}
	switch {
	case pttl == -3:
		return 0, nil
	case pttl < 0:
		return -1, nil // no expiry
	}
	return time.Duration(pttl) * time.Millisecond, nil
}

// abandonLater marks req's operation as given up, at once (a hand-off to it that this
// client hears of from now on is cleaned up: handOver), and cleans up after it in the
// background. It waits for the clean-up up to cleanUpWait: a server that answers has
// cleaned up when the Obtain returns (a TryObtain right after it does not find the old
// queue entry in its way), and one that does not costs the Obtain no more than that.
func (s *singleStore) abandonLater(req acquireRequest) {
	s.hub.abandoned(req.op)
	done := s.cleanUpLater(func(ctx context.Context) error { return s.abandon(ctx, req) })
	t := time.NewTimer(cleanUpWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// cleanUpWait is how long a failed Obtain waits for its clean-up before it returns.
const cleanUpWait = 50 * time.Millisecond

// abandon cleans up after an Obtain that gave up (leave.lua): its queue entry, and the lock
// if one of its requests took it or a release handed it over.
func (s *singleStore) abandon(ctx context.Context, req acquireRequest) error {
	switch {
	case req.kind == kindMulti:
		return s.leaveMulti(ctx, req)
	case req.kind.leased():
		return s.leaveLease(ctx, req)
	}
	s.hub.takeGrant(req.op) // a hand-off it will not take: leave.lua releases it
	match := req.value.String()
	if req.reentrant {
		match = req.value.Rand
	}
	var entry string
	if req.queue {
		queued := req.value
		if req.reentrant {
			queued.Count = 1
		}
		entry = protocol.QueueEntry(req.op, req.ttl, queued.String())
	}
	return s.leave(ctx, req.key, req.op, entry, match, req.reentrant)
}

// leave runs leave.lua for operation op, again when a broken connection lost it (it is safe
// to repeat); match is the plain value, or a re-entrant owner's rand.
func (s *singleStore) leave(ctx context.Context, key, op, entry, match string, reentrant bool) error {
	flag := "0"
	if reentrant {
		flag = "1"
	}
	keys := []any{key, protocol.WaitQueueKey(key), protocol.WaitPresenceKey(key), protocol.LevelsKey(key), protocol.EndedKey(key)}
	return retrying(ctx, func(ctx context.Context) error {
		if _, err := runReleasing(ctx, s, scriptLeave, keys, []any{op, entry, match, flag}, cmdInt64); err != nil {
			return backendError("leave queue", key, err)
		}
		return nil
	})
}

// cleanUpLater runs f in the background, bounded like a release (best effort: what it fails
// to clean up runs out at its TTL), and returns a channel closed when f has returned.
func (s *singleStore) cleanUpLater(f func(ctx context.Context) error) <-chan struct{} {
	done := make(chan struct{})
	s.calls.spawn(func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		_ = f(ctx)
	})
	return done
}

func (s *singleStore) wakeups(keys ...string) (<-chan struct{}, func()) { return s.hub.register(keys) }

func (s *singleStore) fenced() bool { return true }

func (s *singleStore) refuses(kind, string) error { return nil }

func (s *singleStore) close() error {
	err := s.hub.close()
	s.calls.wait()
	return err
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
	if !protocol.CompanionsInSlot(key) {
		return fmt.Errorf("%w: key %q contains '}' without a valid hash tag, so its fence and queue keys "+
			"would be in another cluster slot; use a key with a hash tag such as lock:{order:1001}", ErrInvalid, key)
	}
	return nil
}
