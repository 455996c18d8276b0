package locklib

import (
	"context"
	"fmt"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// ErrUpgrade is the error of an ObtainWrite by a re-entrant owner that holds only read
// levels of the lock: it wraps ErrInvalid.
var ErrUpgrade = fmt.Errorf("%w: upgrade read→write is not supported: two readers upgrading at once would deadlock; "+
	"release the read lock first", ErrInvalid)

// ObtainRead takes a read lease of the read-write lock at key for ttl, waiting as Obtain
// does: any number of readers hold together, never with a writer. A reader is granted only
// when no writer holds the lock and no writer waits ahead of it in the queue, so a stream of
// readers never starves a writer (docs/locklib.md, "Read-write locks"). Each reader's lease
// expires on its own. The returned Lock works as Obtain's (Release, Refresh, watchdog,
// Lost); its Token is the fencing counter when it was granted (the last write's token), or
// when there is none, the server's clock, which then becomes the counter: never 0, at least
// the last write's token and below the next write's. With Reentrant(owner), an owner that
// holds a read or a write lease enters again at once: ObtainRead while holding the write
// lease, then Release of the write lease, is a downgrade.
func (c *Client) ObtainRead(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "ObtainRead", kind: kindRead, key: key, ttl: ttl, wait: true}, opts)
}

// TryObtainRead makes one ObtainRead attempt; ErrNotObtained when a writer holds the lock
// or waits in the queue.
func (c *Client) TryObtainRead(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "TryObtainRead", kind: kindRead, key: key, ttl: ttl}, opts)
}

// ObtainWrite takes the write lease of the read-write lock at key for ttl, waiting as
// Obtain does until no other owner holds anything and it is first in the queue. Its Token is
// a fresh fencing token, as Obtain's. With Reentrant(owner) an owner holding the write lease
// enters again; one holding only read leases is refused with ErrUpgrade (ErrInvalid).
func (c *Client) ObtainWrite(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "ObtainWrite", kind: kindWrite, key: key, ttl: ttl, wait: true}, opts)
}

// TryObtainWrite makes one ObtainWrite attempt; ErrNotObtained when anyone holds the lock
// or waits in the queue.
func (c *Client) TryObtainWrite(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, obtainCall{name: "TryObtainWrite", kind: kindWrite, key: key, ttl: ttl}, opts)
}

// rwKeys are a read-write lock's lease set and companions, in rw_acquire.lua's order.
func rwKeys(key string) []any {
	return []any{key, protocol.FenceKey(key), protocol.WaitQueueKey(key), protocol.WaitPresenceKey(key), protocol.EndedKey(key)}
}

// acquireRW is one attempt to take a read or write lease (rw_acquire.lua). A release wakes
// every waiter it may admit (all the readers at the head of the queue at once), and each
// takes its lease with its own attempt (acquireLease).
func (s *singleStore) acquireRW(ctx context.Context, req acquireRequest) (acquireResult, error) {
	owner := ""
	if req.reentrant {
		owner = req.value.Rand
	}
	return s.acquireLease(ctx, req, scriptRWAcquire, rwKeys(req.key), func(entry, acquiredEvent, waitingEvent, before, after string) []any {
		return []any{string(req.kind.mode()), req.op, before, after, req.ttl.Milliseconds(), owner, entry, s.windowArg,
			fenceLifetime(req.ttl, s.fenceFor).Milliseconds(), acquiredEvent, waitingEvent}
	})
}
