package locklib

import (
	"context"
	"fmt"

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
