package locklib

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Lease sets (docs/value-format.md, "Lease sets") hold the locks of several kinds: read and
// write levels of a read-write lock, permits of a lease semaphore. A lease is one member of
// the sorted set at the key, scored by its own deadline; a hold's match is that member. The
// kinds differ only in how a lease is granted (each has its own acquire script); releasing,
// renewing, timing and cleaning up after a lease are the same for all (the lease_*.lua
// scripts, dispatched to by singleStore when hold.kind.leased()).

// leaseKeys are a lease set and its companions, in the order lease_release.lua and
// lease_leave.lua take them, as command arguments.
func leaseKeys(key string) []any {
	return []any{key, protocol.WaitQueueKey(key), protocol.WaitPresenceKey(key), protocol.EndedKey(key), protocol.LimitKey(key)}
}

// releaseLease removes h's member (lease_release.lua) and wakes the waiters that may now be
// admitted.
func (s *singleStore) releaseLease(ctx context.Context, h hold, releasedEvent string) error {
	reply, err := runReleasing(ctx, s, scriptLeaseRelease, leaseKeys(h.key), []any{h.match, h.op, releasedEvent}, cmdSlice)
	if err != nil {
		return backendError("release", h.key, err)
	}
	if len(reply) != 2 {
		return fmt.Errorf("%w: release %q: unexpected reply %v", ErrBackend, h.key, reply)
	}
	// Status 2 (an earlier copy of this release ran) is a success: its wake-ups went out
	// from the server, which no lost reply takes back.
	if status, _ := reply[0].(int64); status < 0 {
		return fmt.Errorf("%w: %s lease on %q is gone or expired", ErrNotHeld, h.kind.mode(), h.key)
	}
	return nil
}

// leaveLease cleans up after an Obtain of a lease that gave up (lease_leave.lua): its queue
// entry, and a lease one of its requests took. Safe to repeat, so it is sent again when a
// broken connection lost it.
func (s *singleStore) leaveLease(ctx context.Context, req acquireRequest) error {
	var entry string
	if req.queue {
		entry = leaseEntry(req)
	}
	return retrying(ctx, func(ctx context.Context) error {
		if _, err := runReleasing(ctx, s, scriptLeaseLeave, leaseKeys(req.key), []any{req.op, entry}, cmdInt64); err != nil {
			return backendError("leave queue", req.key, err)
		}
		return nil
	})
}

// leaseEntry is req's entry in the wait queue of a lease set: the mode in front of the
// value (protocol.QueueEntry; docs/value-format.md, "Lease sets").
func leaseEntry(req acquireRequest) string {
	v := req.value
	v.Count = 0
	return protocol.QueueEntry(req.op, req.ttl, string(req.kind.mode())+"|"+v.String())
}

// leaseArgs builds a lease kind's acquire script arguments: its queue entry (” for a
// TryObtain), its acquired and waiting events (” when events are off), and the member's
// value split around its timestamp (the script stamps it with the server's clock).
type leaseArgs func(entry, acquiredEvent, waitingEvent, beforeStamp, afterStamp string) []any

// acquireLease makes one attempt with a lease kind's acquire script (rw_acquire.lua,
// semaphore_acquire.lua), which all reply {status, member, token, waiters, pttl ms, queue
// position}: status 1 taken, 0 not taken (pttl: the blocking lease's time left, if any), -2
// the operation has ended, -4 an upgrade refused. A lease is never handed over: a release
// wakes the waiters it may admit, and each takes its lease with its own attempt.
func (s *singleStore) acquireLease(ctx context.Context, req acquireRequest, script *serverScript, keys []any, args leaseArgs) (acquireResult, error) {
	v := req.value
	v.Count = 0
	var entry string
	if req.queue {
		if req.wake != nil {
			s.hub.bind(req.wake, req.op)
		}
		entry = leaseEntry(req)
	}
	var acquiredEvent, waitingEvent string
	if s.events {
		now := time.Now().UnixMilli()
		mode := req.kind.eventMode()
		acquiredEvent = eventPrefix(protocol.Event{Type: string(EventAcquired), Key: req.key, Mode: mode, Node: v.Node,
			Trace: v.Trace, TTLMs: req.ttl.Milliseconds(), WaitMs: req.waited.Milliseconds(), AtMs: now})
		if req.queue {
			waitingEvent = eventPrefix(protocol.Event{Type: string(EventWaiting), Key: req.key, Mode: mode, Node: v.Node,
				Trace: v.Trace, AtMs: now})
		}
	}
	before, after, _ := protocol.AroundStamp(v.String())
	reply, err := run(ctx, s, script, keys, args(entry, acquiredEvent, waitingEvent, before, after), cmdSlice, s.lateAcquire(ctx, req))
	if err != nil {
		return acquireResult{}, backendError("acquire", req.key, err)
	}
	if len(reply) != 6 {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: unexpected reply %v", ErrBackend, req.key, reply)
	}
	status, _ := reply[0].(int64)
	member, _ := reply[1].(string)
	tokenText, _ := reply[2].(string)
	waiters, _ := reply[3].(int64)
	pttl, _ := reply[4].(int64)
	position, _ := reply[5].(int64)
	switch status {
	case -2:
		return acquireResult{}, fmt.Errorf("%w: acquire %q: the server reports this operation as ended", ErrBackend, req.key)
	case -4:
		return acquireResult{}, fmt.Errorf("%w: %q: the owner holds read levels only", ErrUpgrade, req.key)
	}
	res := acquireResult{acquired: status == 1, value: member, level: req.op, waiters: waiters, position: position}
	if !res.acquired {
		res.holderTTL = time.Duration(pttl) * time.Millisecond
		if req.queue {
			s.hub.start(protocol.WakeChannelPrefix + s.clientID)
		}
		return res, nil
	}
	if res.token, err = strconv.ParseInt(tokenText, 10, 64); err != nil {
		return acquireResult{}, fmt.Errorf("%w: acquire %q: bad token %q", ErrBackend, req.key, tokenText)
	}
	res.validUntil = req.start.Add(time.Duration(pttl) * time.Millisecond)
	return res, nil
}
