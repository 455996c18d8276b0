package locklib

import (
	"context"
	"strconv"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// store is where locks live: one Redis server or cluster (singleStore, single.go) or a
// Redlock quorum of N independent servers (redlockStore, redlock.go and redlock_acquire.go). Client and Lock hold everything that is the same
// for both (options, waiting and back-off, the watchdog, Lost(), events, the observer), so
// code switches between them by construction only: New(rdb) or NewRedlock(clients).
//
// Every request a store sends may reach a server twice (go-redis sends it again when the
// connection broke before the reply came) or late (after the caller gave up on it): the
// store's scripts give the same outcome either way (docs/locklib.md, "Requests that run
// twice").
type store interface {
	// acquire makes one attempt. Taken by someone else is acquired=false with a nil error;
	// an error means the attempt could not be decided (backend trouble, context).
	acquire(ctx context.Context, req acquireRequest) (acquireResult, error)

	// refresh extends a held lock to live at least ttl more (it never shortens it). It
	// returns an error wrapping ErrNotHeld when the key is gone or holds another value, and
	// the new local validity deadline.
	refresh(ctx context.Context, h hold, ttl time.Duration) (validUntil time.Time, err error)

	// release gives the lock up: compare-and-delete, or for a re-entrant lock its level
	// (the key is deleted with the last). ErrNotHeld when it was not held any more.
	release(ctx context.Context, h hold) error

	// pttl is the remaining time of the lock as Redis sees it, 0 when h does not hold it.
	pttl(ctx context.Context, h hold) (time.Duration, error)

	// wakeups delivers a signal each time one of keys may have become free (a release
	// message). Signals may be lost or spurious: waiters still poll with back-off. stop
	// unsubscribes. Several keys are a multi-key lock's (the single store only).
	wakeups(keys ...string) (signal <-chan struct{}, stop func())

	// fenced reports whether acquire hands out safe fencing tokens (false for Redlock).
	fenced() bool

	// refuses returns an error wrapping ErrInvalid when the store cannot keep locks of kind k
	// (call names the caller's method, for the message); nil when it can.
	refuses(k kind, call string) error

	// close releases the store's own resources (subscriptions) and waits for the requests
	// it still has running; it does not close the caller's clients.
	close() error
}

// kind is what a lock is: it decides which of a store's scripts take, renew, release and
// clean up after it (singleStore dispatches on it; Redlock keeps kindLock only).
type kind uint8

const (
	kindLock   kind = iota // a plain or re-entrant lock: a string at the key (Obtain)
	kindRead               // a read level of a read-write lock: a member of a lease set (ObtainRead)
	kindWrite              // a write level of a read-write lock: a member of a lease set (ObtainWrite)
	kindPermit             // one permit of a lease semaphore: a member of a lease set (Semaphore)
	kindMulti              // a multi-key lock: the same string at every key (ObtainMulti)
)

// leased reports whether locks of kind k are members of a lease set (docs/value-format.md,
// "Lease sets"): they share its release, refresh, pttl and clean-up scripts (lease.go).
func (k kind) leased() bool { return k == kindRead || k == kindWrite || k == kindPermit }

// mode is the lease-set mode of kind k (its member's first byte, and an event's "mode").
func (k kind) mode() protocol.Mode {
	switch k {
	case kindRead:
		return protocol.ModeRead
	case kindWrite:
		return protocol.ModeWrite
	case kindPermit:
		return protocol.ModePermit
	}
	return 0
}

// eventMode is the "mode" field of kind k's events: "" for a plain lock.
func (k kind) eventMode() string {
	switch {
	case k.leased():
		return k.mode().String()
	case k == kindMulti:
		return "multi"
	}
	return ""
}

// hold is one held lock as the stores see it: one level, for a re-entrant lock.
type hold struct {
	kind kind
	key  string
	// match is what the scripts compare the stored value with: the value, or for a
	// re-entrant lock its protocol.Value.Base() (the stored value is then the base + ':<count>');
	// for a lease-set kind, its member (protocol.LeaseMember).
	match     string
	op        string // the operation id it is recorded under (acquireResult.level)
	reentrant bool
	keys      []any    // acquireResult.keys
	set       []string // acquireRequest.set
}

// acquireRequest is one attempt to take a key.
type acquireRequest struct {
	kind      kind
	key       string
	value     protocol.Value // Count is ignored: the store sets it for re-entrant locks
	ttl       time.Duration  // asked-for lifetime
	reentrant bool           // a stored value with the same protocol.Value.Rand (same owner) may enter again, count + 1
	// op identifies the Obtain call, "<client id>:<n>", in every request it sends: it is a
	// re-entrant level's id, a waiter's id in the wait queue, and what a late copy of one of
	// its requests is recognized by.
	op     string
	queue  bool          // wait in the store's queue (Obtain; not TryObtain)
	start  time.Time     // monotonic start of the attempt: validity is measured from it
	waited time.Duration // how long the Obtain has waited so far (for the acquired event)
	// limit is a semaphore's permits (kindPermit): its limit while the limit key is absent.
	limit int
	// wake is the signal channel this Obtain got from wakeups(key), so a store that
	// addresses wake-ups to one waiter can route them to it (nil for TryObtain).
	wake <-chan struct{}
	// set is every key of a multi-key lock, in the caller's order (key is the first); nil
	// for the other kinds.
	set []string
}

// subject names what req takes in a message: its quoted key, or a multi-key lock's keys.
func (req acquireRequest) subject() string {
	if req.set != nil {
		return setName(req.set)
	}
	return strconv.Quote(req.key)
}

// lockedKeys are the keys req takes: its set, or its one key.
func (req acquireRequest) lockedKeys() []string {
	if req.set != nil {
		return req.set
	}
	return []string{req.key}
}

// hold is what the stores need to know of the lock res says this request took.
func (req acquireRequest) hold(res acquireResult) hold {
	h := hold{kind: req.kind, key: req.key, match: res.value, op: res.level, reentrant: req.reentrant, keys: res.keys, set: req.set}
	if req.reentrant && !req.kind.leased() {
		h.match = protocol.BaseOf(res.value)
	}
	return h
}

// acquireResult is the outcome of one attempt.
type acquireResult struct {
	acquired bool
	value    string // the value now stored (with the count for a re-entrant lock; a lease set's member)
	// level is the operation id the lock is recorded under: the request's op, or for Redlock,
	// whose every attempt must be told from the others (a late undo of one attempt must not
	// remove the level a later one holds), the attempt's own.
	level      string
	token      int64         // fencing token; 0 when the store has none (Redlock)
	validUntil time.Time     // local deadline by which the lock must be renewed
	holderTTL  time.Duration // when not acquired: the holder's remaining TTL if known, else 0 (-1: no expiry)
	waiters    int64         // waiters queued on the key after this attempt, when the store knows
	// position is this waiter's place in the store's wait queue (0 = next), -1 when the
	// store has no queue or did not say. Waiters behind the first are woken in turn, so
	// they poll only at the back-off cap.
	position int64
	// keys are the key and its companions as the single store's scripts take them (lockKeys),
	// derived by the acquire and reused by the release; nil for Redlock.
	keys []any
	// blocking is the key that a multi-key lock's attempt found held or queued ("" for the
	// other kinds: their one key).
	blocking string
}

// abandoner is implemented by stores that must clean up after an Obtain that gave up: its
// queue entry, and a lock that one of its requests may have taken or been handed. A
// hand-off to it that the store hears of from then on is released too.
type abandoner interface {
	abandonLater(req acquireRequest)
}
