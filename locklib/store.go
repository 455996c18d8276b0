package locklib

import (
	"context"
	"time"
)

// store is where locks live: one Redis server or cluster (the single-instance store) or a
// Redlock quorum of N independent servers. Client and Lock hold everything that is the same
// for both (options, waiting and back-off, the watchdog, Lost(), events, the observer), so
// code switches between them by construction only: New(rdb) or NewRedlock(clients).
type store interface {
	// acquire makes one attempt. Taken by someone else is acquired=false with a nil error;
	// an error means the attempt could not be decided (backend trouble, context).
	acquire(ctx context.Context, req acquireRequest) (acquireResult, error)

	// For refresh, release and pttl, value is the stored value, or for a re-entrant lock
	// its Value.Base(): the stored value then matches it followed by ':<count>'.

	// refresh extends a lock held with value to ttl. It returns an error wrapping ErrNotHeld
	// when the key is gone or holds another value, and the new local validity deadline.
	refresh(ctx context.Context, key, value string, ttl time.Duration) (validUntil time.Time, err error)

	// release gives the lock up: compare-and-delete, or for a re-entrant lock one level
	// down (deleted only at the last level). ErrNotHeld when it was not ours any more.
	release(ctx context.Context, key, value string, reentrant bool) (releaseResult, error)

	// pttl is the remaining time of the lock as Redis sees it, 0 when it is not held with value.
	pttl(ctx context.Context, key, value string) (time.Duration, error)

	// wakeups delivers a signal each time key may have become free (a release message).
	// Signals may be lost or spurious: waiters still poll with back-off. stop unsubscribes.
	wakeups(key string) (signal <-chan struct{}, stop func())

	// fenced reports whether acquire hands out safe fencing tokens (false for Redlock).
	fenced() bool

	// close releases the store's own resources (subscriptions), not the caller's clients.
	close() error
}

// acquireRequest is one attempt to take a key.
type acquireRequest struct {
	key       string
	value     Value         // Count is ignored: the store sets it for re-entrant locks
	ttl       time.Duration // asked-for lifetime
	reentrant bool          // a stored value with the same Value.Rand (same owner) may enter again, count + 1
	waiterID  string        // identifies this Obtain call in a store's wait queue ("" for TryObtain)
	start     time.Time     // monotonic start of the attempt, for Redlock validity
	waited    time.Duration // how long the Obtain has waited so far (for the acquired event)
	// wake is the signal channel this Obtain got from wakeups(key), so a store that
	// addresses wake-ups to one waiter can route them to it (nil for TryObtain).
	wake <-chan struct{}
}

// acquireResult is the outcome of one attempt.
type acquireResult struct {
	acquired   bool
	value      string        // the value now stored (with the count for a re-entrant lock)
	count      int           // re-entry count after this attempt; 0 for plain locks
	token      int64         // fencing token; 0 when the store has none (Redlock)
	validUntil time.Time     // local deadline by which the lock must be renewed
	holderTTL  time.Duration // when not acquired: the holder's remaining TTL if known, else 0 (-1: no expiry)
	waiters    int64         // waiters queued on the key after this attempt, when the store knows
	// position is this waiter's place in the store's wait queue (0 = next), -1 when the
	// store has no queue or did not say. Waiters behind the first are woken in turn, so
	// they poll only at the back-off cap.
	position int64
}

// releaseResult says what a release did.
type releaseResult struct {
	deleted bool // the key is gone (plain lock, or the last re-entry level)
	count   int  // re-entry levels still held when not deleted
}
