package scanner

import (
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Kind is what sort of primitive a lock key is: an exclusive lock (the zero value) or a shared
// one, whose Lock.Shared says who holds what.
type Kind uint8

// The kinds (docs/scanner.md, "Shared primitives").
const (
	KindLock Kind = iota // an exclusive lock: one holder (re-entrant or not)
	// KindRWLock: a read-write lock. lockscope: a lease set of r| and w| members; Redisson:
	// an RReadWriteLock's hash (mode read/write).
	KindRWLock
	// KindSemaphore: N permits. lockscope: a lease set of p| members and limit:{key}, each
	// permit a holder with its own deadline; Redisson: an RSemaphore, a string of the permits
	// available and no record of holders (Shared.HoldersUnknown).
	KindSemaphore
	// KindPermitSemaphore: Redisson's RPermitExpirableSemaphore, the permits available and a
	// sorted set "{key}:timeout" of permit ids scored by their expiry.
	KindPermitSemaphore
)

// String is the kind's name in the CLI's KIND column and the JSON "kind" field.
func (k Kind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindRWLock:
		return "rwlock"
	case KindSemaphore:
		return "semaphore"
	case KindPermitSemaphore:
		return "permit-semaphore"
	}
	return "unknown"
}

// Kind is l's kind: KindLock unless l is a shared primitive.
func (l *Lock) Kind() Kind {
	if l.Shared == nil {
		return KindLock
	}
	return l.Shared.Kind
}

// IsSemaphore reports whether l is a semaphore of either kind. A semaphore's key has no TTL
// by design (its permits expire, or are released, not the key): NoExpiry is no lock that
// never frees itself there.
func (l *Lock) IsSemaphore() bool {
	k := l.Kind()
	return k == KindSemaphore || k == KindPermitSemaphore
}

// MaybeNaiveLock reports whether l, read as a Redisson RSemaphore (a small decimal string
// without TTL, no permits on record), may as well be a naive lock whose EXPIRE never came
// (`SET key 1 NX`, then a crash before `EXPIRE`): nothing in Redis tells the two apart, and
// the lock would never free itself. present.NeverFrees keeps flagging it.
func (l *Lock) MaybeNaiveLock() bool {
	return l.Kind() == KindSemaphore && l.Type == "string" && l.Shared.HoldersUnknown
}

// Shared is what only shared primitives have (read-write locks and semaphores), behind one
// pointer of Lock so that the census's million exclusive locks pay 8 bytes for it.
//
// Counts are of what was read: a lease set, hash or permit set with more than
// Options.HashCap members is read up to that many (Truncated), and its counts are then a
// lower bound.
type Shared struct {
	Kind Kind
	// Mode is who holds a read-write lock now: protocol.ModeWrite when a writer does (it may
	// hold read levels too: a downgrade), protocol.ModeRead when only readers do, 0 when no
	// live holder was read. Semaphores: protocol.ModePermit.
	Mode protocol.Mode

	// Holders are the holders read, in the order stored (a lease set's by deadline), expired
	// ones not yet removed included (SharedHolder.Expired).
	Holders []SharedHolder
	// HoldersUnknown: the layout records no holders (Redisson's RSemaphore); Holders is empty
	// and InUse unknown.
	HoldersUnknown bool

	// Semaphores: Limit is the number of permits (lockscope: limit:{key}; a
	// RPermitExpirableSemaphore: Available plus the permits in its set, expired ones
	// included, which it gives back only when next asked), 0 with HasLimit false when
	// unknown (a RSemaphore keeps only what is available). Available is what may still be
	// acquired (Redisson: the string at the key; lockscope: Limit minus InUse, 0 when more
	// are out than the limit after a shrink). InUse counts the live permits.
	Limit        int
	HasLimit     bool
	Available    int
	HasAvailable bool
	// InUse is how many leases live holders have: read-write lock levels (readers' and
	// writer's), or permits.
	InUse int
	// Expired counts the levels or permits whose deadline has passed but that are still stored:
	// lockscope's scripts remove them at the key's next change, Redisson reclaims a
	// RPermitExpirableSemaphore's at its next acquire or availablePermits. They hold nothing.
	Expired int

	// Waiters are lockscope's queued waiters (waitq:{key}), in queue order, at most HashCap
	// of them (Lock.Waiters is the queue's size). Redisson's waiters leave no entries.
	Waiters []SharedWaiter

	// Truncated: more members (fields, permits, queue entries) were stored than read.
	Truncated bool
}

// LiveOwners counts the owners among the live holders: an owner holding write and read levels
// (a downgrade) is one owner, the writer. When there is one, first is it; else first is the
// first live owner (the writer, when there is one).
func (s *Shared) LiveOwners() (n int, first SharedHolder) {
	for _, h := range s.Holders {
		if !h.Expired && h.Mode == protocol.ModeWrite {
			first = h
		}
	}
	writer := first.Mode == protocol.ModeWrite
	for _, h := range s.Holders {
		if h.Expired || (writer && h.ID == first.ID && h.Mode != protocol.ModeWrite) {
			continue
		}
		if n++; n == 1 && !writer {
			first = h
		}
	}
	return n, first
}

// SharedHolder is one holder of a shared primitive: a lockscope owner or permit, a Redisson
// read-write lock's thread, or a Redisson permit.
type SharedHolder struct {
	// ID tells holders apart, and is what a per-holder force-release names:
	//   - lockscope lease set: the value's rand (16 hex): the owner of a re-entrant holder,
	//     one permit or one Obtain otherwise;
	//   - Redisson read-write lock: the hash field <uuid>:<threadId>, without ":write";
	//   - Redisson permit: the permit id as 32 lowercase hex (what acquire returned).
	ID   string
	Mode protocol.Mode // ModeRead, ModeWrite or ModePermit
	// Count is the holder's levels in Mode: its members (lockscope), its hash count
	// (Redisson), 1 for a permit.
	Count int
	// TTL is the holder's own time left at Lock.FetchedAt: its latest deadline (lockscope,
	// Redisson permits), the longest PTTL of its rwlock_timeout keys (a Redisson reader), or
	// the key's PTTL (a Redisson writer, whose lease is the key's). 0 when Expired.
	TTL time.Duration
	// Expired: every lease of the holder is past its deadline (it holds nothing), yet stored.
	Expired bool
	// NoExpiry: a Redisson permit acquired without a lease time (scored
	// RedissonNoExpiryMs): it is held until released. TTL is 0.
	NoExpiry bool

	// lockscope only: the holder's value (from its latest-deadline member).
	Node       string
	Trace      string
	AcquiredAt time.Time

	// Leases are what a compare-and-delete of this holder removes, exactly as stored: one
	// per level (a lockscope member, a Redisson reader's rwlock_timeout key) or permit. A
	// Redisson writer has none: its lease is the hash field (Field) and the key's TTL.
	Leases []Lease
	// Field is a Redisson read-write lock's hash field, exactly (":write" included for the
	// writer); "" for lockscope and permits.
	Field string
}

// Lease is one stored lease of a holder.
type Lease struct {
	// Member is the entry as stored: a lockscope lease set member text (protocol.LeaseMember),
	// a Redisson permit's 16 raw id bytes (the member of "{key}:timeout"), or a Redisson
	// reader level's key ("{key}:<uuid>:<threadId>:rwlock_timeout:<n>").
	Member string
	// Deadline is the sorted set score: unix ms (the server's clock for lockscope, the
	// Redisson client's for a permit); 0 for a Redisson reader level, whose expiry is its
	// key's TTL.
	Deadline int64
	// TTL is the lease's time left at Lock.FetchedAt (0 when expired).
	TTL time.Duration
}

// SharedWaiter is one entry of a lockscope lease set's wait queue (waitq:{key}).
type SharedWaiter struct {
	ID    string        // the waiter id, "<client id>:<n>"
	Mode  protocol.Mode // what it waits for: ModeRead, ModeWrite or ModePermit
	TTL   time.Duration // the lease it asks for
	Value string        // the value it will hold (node:trace:unix_ms:rand)
	Entry string        // the queue member exactly as stored
}

// Live is s's holders that hold something (not Expired), in the order stored.
func (s *Shared) Live() []SharedHolder {
	live := make([]SharedHolder, 0, len(s.Holders))
	for _, h := range s.Holders {
		if !h.Expired {
			live = append(live, h)
		}
	}
	return live
}
