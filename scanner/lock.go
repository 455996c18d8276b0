package scanner

import (
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Format names how a lock key's value was written, so the inspector can say who holds it.
type Format string

// The formats the decoders recognise (docs/scanner.md describes each).
const (
	FormatLockscope Format = "lockscope"  // locklib: <node>:<trace>:<unix_ms>:<rand16hex>[:<count>]
	FormatRedisson  Format = "redisson"   // hash: field <uuid>:<threadId> -> re-entry count
	FormatRedsync   Format = "redsync"    // 24-char std base64 of 16 random bytes
	FormatBSM       Format = "bsm"        // 22-char raw-url-base64 token followed by metadata
	FormatUUID      Format = "uuid"       // a UUID token (8-4-4-4-12 hex)
	FormatHex       Format = "hex"        // a hex token (node-redlock writes 32 hex chars)
	FormatOpaque    Format = "opaque"     // a string in no known layout
	FormatNotALock  Format = "not-a-lock" // a list, set, zset, stream, ... under the pattern
	FormatUnknown   Format = "unknown"    // the value could not be read (no permission): holder unknown
)

// ValueCap is the most of a value the scanner reads (GETRANGE 0 ValueCap-1).
const ValueCap = 4096

// Lock is one lock key as the scanner found it.
//
// TTL is the remaining time at FetchedAt; RemainingAt extrapolates it. NoExpiry marks a key
// without a TTL: a lock that will never free itself, except for a semaphore (IsSemaphore),
// whose key has none by design (its permits expire or are released, not the key). A
// lockscope lease set's TTL is its latest lease deadline. Gone marks a key that no longer
// exists (only Get and Watch deltas report gone keys; a census drops keys that vanish
// mid-scan).
type Lock struct {
	Key    string
	Format Format
	Type   string // Redis type: "string", "hash", "list", ...; "" when it could not be read

	// Decoded holder, when the format carries it.
	Node       string    // holder node (lockscope); "" when unknown
	Trace      string    // the holder's trace id (lockscope); "" when none
	AcquiredAt time.Time // zero when the format does not say
	Reentry    int       // re-entry count (lockscope re-entrant, redisson); 0 for a plain lock
	Owners     []Owner   // redisson: every <uuid>:<threadId> field and its count

	// Expiry, as Redis saw it at FetchedAt (NoExpiry and Gone are with the flags below).
	TTL       time.Duration
	FetchedAt time.Time

	// Companion keys (locklib/keys.go), read when present (HasFence, HasWaiters below).
	Fence   int64 // the fencing counter at protocol.FenceKey(Key)
	Waiters int   // ZCARD of protocol.WaitQueueKey(Key)

	// Value is the raw value: at most ValueCap bytes of a string (Truncated says it was
	// longer), or for a hash its fields as "field=value" lines. Display gives a safe form.
	Value string

	// Addr is the server the key was read on: the standalone server, the cluster master
	// that holds its slot, or the independent server it is a lock of (with Key, the lock's
	// identity there). It is "" for a Redlock target, whose Quorum lists every instance.
	// (PerInstance gives one view of both.)
	Addr string
	// Quorum is set for Redlock targets only: the key on each instance and how many of them
	// agree on one holder. Single-server records carry no per-instance copy: at a million
	// locks that copy was an eighth of a census's memory.
	Quorum *Quorum
	// Shared is set for shared primitives only (read-write locks, semaphores: Kind): their
	// holders, permits and waiters. Behind a pointer: exclusive locks pay 8 bytes for it.
	Shared *Shared

	// Flags, kept together so that a million locks do not pay padding after each one.
	NoExpiry   bool // the key has no TTL: it will never free itself (unless IsSemaphore)
	Gone       bool // the key does not exist (Get, Watch deltas)
	HasFence   bool // false: no fence key (or not readable)
	HasWaiters bool // false: unknown (not readable); true with Waiters 0: nobody waits
	Truncated  bool // Value is the first ValueCap bytes of a longer value
}

// Owner is one holder entry of a redisson lock hash.
type Owner struct {
	ID    string // <uuid>:<threadId>
	Count int    // re-entry count
}

// Holder is who holds a lock, as far as telling holders apart goes: its value without what
// changes while the same holder keeps it (locklib's re-entry count), or a Redisson lock's
// owner ids (their hold counts left out); "" when unknown. A renewal changes only the TTL.
func Holder(format Format, value string, owners []Owner) string {
	switch {
	case len(owners) == 1:
		return owners[0].ID
	case len(owners) > 1:
		ids := make([]string, len(owners))
		for i, o := range owners {
			ids[i] = o.ID
		}
		slices.Sort(ids)
		return strings.Join(ids, "\x00")
	case format == FormatLockscope:
		return protocol.WithoutCount(value)
	}
	return value
}

// Instance is the key's state on one server.
type Instance struct {
	Addr      string
	Value     string        // raw value there (same cap as Lock.Value)
	TTL       time.Duration // remaining at the Lock's FetchedAt
	Present   bool          // the key exists there
	Missing   bool          // the server could not be read: its state is unknown
	NoExpiry  bool
	Truncated bool
}

// Quorum is the Redlock view of a key: its state on each of the Total instances, and the
// agreement: Agree instances hold the Lock's Value, Needed = N/2+1 are required for a valid
// Redlock lock.
type Quorum struct {
	Instances []Instance // every instance, in Target order (Present says which hold the key)
	Agree     int
	Needed    int
	Total     int
	Reached   bool // Agree >= Needed
}

// PerInstance is the key's state on each server it was read on: a Redlock target's
// instances, or for a standalone or cluster target the one server, built from the record.
func (l *Lock) PerInstance() []Instance {
	if l.Quorum != nil {
		return l.Quorum.Instances
	}
	if l.Addr == "" {
		return nil
	}
	in := Instance{Addr: l.Addr, Present: !l.Gone}
	if in.Present {
		in.Value, in.TTL, in.NoExpiry, in.Truncated = l.Value, l.TTL, l.NoExpiry, l.Truncated
	}
	return []Instance{in}
}

// Meta is the metadata a bsm/redislock holder wrote after its token; "" for other formats.
// (A method, not a field: every record would pay for a field only bsm locks use.)
func (l *Lock) Meta() string {
	if l.Format != FormatBSM || len(l.Value) < bsmTokenLen {
		return ""
	}
	return l.Value[bsmTokenLen:]
}

// Token is the random token a bsm/redislock holder wrote before its metadata; "" for other
// formats.
func (l *Lock) Token() string {
	if l.Format != FormatBSM {
		return ""
	}
	return l.Value[:min(len(l.Value), bsmTokenLen)]
}

// RemainingAt extrapolates the TTL to now from FetchedAt + TTL, without asking Redis.
// It is 0 for a gone or expired lock and for a lock without expiry (check NoExpiry).
func (l *Lock) RemainingAt(now time.Time) time.Duration {
	if l.Gone || l.NoExpiry {
		return 0
	}
	left := l.FetchedAt.Add(l.TTL).Sub(now)
	if left < 0 {
		return 0
	}
	return left
}

// Age is how long the lock has been held at now; 0 when AcquiredAt is unknown.
func (l *Lock) Age(now time.Time) time.Duration {
	if l.AcquiredAt.IsZero() {
		return 0
	}
	return now.Sub(l.AcquiredAt)
}
