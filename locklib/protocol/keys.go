package protocol

import "strings"

// Companion keys live in the same Redis Cluster slot as their lock key, so one Lua script can
// touch both, and never match the lock pattern `lock:*`, so a census does not count them.
//
//	key                  FenceKey                  WaitQueueKey              LevelsKey
//	lock:order:1001      fence:{lock:order:1001}   waitq:{lock:order:1001}   levels:{lock:order:1001}
//	lock:{order}:1001    fence:lock:{order}:1001   waitq:lock:{order}:1001   levels:lock:{order}:1001
//
// (WaitPresenceKey and EndedKey follow the same rule with waitp: and ended:.)
// A key that already has a hash tag keeps it (the prefix does not move the tag); any other
// key becomes the tag. docs/value-format.md states the rule for other readers.

// Companion is a kind of companion key; LockKeyOf names it.
type Companion uint8

// The companion keys, one per function below.
const (
	Fence        Companion = iota + 1 // FenceKey
	WaitQueue                         // WaitQueueKey
	WaitPresence                      // WaitPresenceKey
	Levels                            // LevelsKey
	Ended                             // EndedKey
	Limit                             // LimitKey (lease semaphores only)
)

// companionPrefixes is the naming of each Companion: prefix, then the hash-tagged lock key.
var companionPrefixes = [...]string{
	Fence:        "fence:",
	WaitQueue:    "waitq:",
	WaitPresence: "waitp:",
	Levels:       "levels:",
	Ended:        "ended:",
	Limit:        "limit:",
}

// FenceKey is the key of the fencing-token counter of lock key.
func FenceKey(key string) string { return companionKey(Fence, key) }

// WaitQueueKey is the key of the FIFO queue of waiters of lock key (a sorted set).
func WaitQueueKey(key string) string { return companionKey(WaitQueue, key) }

// WaitPresenceKey is the key of the presence deadlines of WaitQueueKey's waiters (a sorted
// set scored by the unix ms after which a waiter that made no new attempt is dropped).
func WaitPresenceKey(key string) string { return companionKey(WaitPresence, key) }

// LevelsKey is the key of the levels of a re-entrant lock key (a set of the operation ids of
// the Obtains that entered it; its size is the count in the value). It lives and dies with
// the lock key: a tool that extends or deletes a re-entrant lock does the same to it.
func LevelsKey(key string) string { return companionKey(Levels, key) }

// EndedKey is the key of the last operations on lock key that ended (a sorted set of up to
// 1,024, scored by the unix ms when each ended; it goes 10 s after the last): a copy of a
// request that go-redis sent again finds its operation there and changes nothing
// (docs/locklib.md).
func EndedKey(key string) string { return companionKey(Ended, key) }

// LimitKey is the key of a lease semaphore's number of permits (a decimal string, no TTL):
// the first Acquire sets it, Resize changes it (docs/value-format.md, "Lease semaphores").
func LimitKey(key string) string { return companionKey(Limit, key) }

// LockKeyOf inverts the companion naming: the lock key that key is the kind companion of, so
// that a SCAN that returns companion keys tells which locks have them. ok is false for a key
// that is no companion. The naming is not one-to-one for lock keys that are a whole hash tag:
// fence:{lock:a} is the fence of both lock:a and {lock:a}; LockKeyOf names lock:a.
func LockKeyOf(key string) (lockKey string, kind Companion, ok bool) {
	for kind := Fence; kind <= Limit; kind++ {
		rest, found := strings.CutPrefix(key, companionPrefixes[kind])
		if !found {
			continue
		}
		// companionKey's two cases, checked without building the key: a lock key without a
		// hash tag was wrapped in one; a lock key with one follows the prefix as it is.
		if inner, wrapped := strings.CutPrefix(rest, "{"); wrapped && strings.HasSuffix(inner, "}") {
			if lock := inner[:len(inner)-1]; !hasHashTag(lock) {
				return lock, kind, true
			}
		}
		if hasHashTag(rest) {
			return rest, kind, true
		}
		return "", 0, false
	}
	return "", 0, false
}

// CompanionsInSlot reports whether key's companion keys hash to key's Redis Cluster slot, so
// that one script may touch them all: always, unless key has no hash tag and contains '}',
// which would end the tag that companionKey adds early.
func CompanionsInSlot(key string) bool {
	return hasHashTag(key) || !strings.Contains(key, "}")
}

// CompanionKeys are key's companions in Companion order (Fence to Ended), cut from one
// string: a caller that needs them all (every locklib script) allocates once, not five times.
func CompanionKeys(key string) [Ended]string {
	open, close := "{", "}"
	if hasHashTag(key) {
		open, close = "", ""
	}
	tagged := len(open) + len(key) + len(close)
	size := 0
	for kind := Fence; kind <= Ended; kind++ {
		size += len(companionPrefixes[kind]) + tagged
	}
	var all strings.Builder
	all.Grow(size)
	for kind := Fence; kind <= Ended; kind++ {
		all.WriteString(companionPrefixes[kind])
		all.WriteString(open)
		all.WriteString(key)
		all.WriteString(close)
	}
	s := all.String()
	var keys [Ended]string
	for kind := Fence; kind <= Ended; kind++ {
		n := len(companionPrefixes[kind]) + tagged
		keys[kind-1], s = s[:n], s[n:]
	}
	return keys
}

func companionKey(kind Companion, key string) string {
	if hasHashTag(key) {
		return companionPrefixes[kind] + key
	}
	return companionPrefixes[kind] + "{" + key + "}"
}

// hasHashTag applies Redis Cluster's rule: a '{' followed later by a '}' with at least one
// byte between the first '{' and the first '}' after it.
func hasHashTag(key string) bool { return len(HashTag(key)) < len(key) }
