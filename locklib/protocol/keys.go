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

// FenceKey is the key of the fencing-token counter of lock key.
func FenceKey(key string) string { return companionKey("fence:", key) }

// WaitQueueKey is the key of the FIFO queue of waiters of lock key (a sorted set).
func WaitQueueKey(key string) string { return companionKey("waitq:", key) }

// WaitPresenceKey is the key of the presence deadlines of WaitQueueKey's waiters (a sorted
// set scored by the unix ms after which a waiter that made no new attempt is dropped).
func WaitPresenceKey(key string) string { return companionKey("waitp:", key) }

// LevelsKey is the key of the levels of a re-entrant lock key (a set of the operation ids of
// the Obtains that entered it; its size is the count in the value). It lives and dies with
// the lock key: a tool that extends or deletes a re-entrant lock does the same to it.
func LevelsKey(key string) string { return companionKey("levels:", key) }

// EndedKey is the key of the last operations on lock key that ended (a sorted set of up to
// 1,024, scored by the unix ms when each ended; it goes 10 s after the last): a copy of a
// request that go-redis sent again finds its operation there and changes nothing
// (docs/locklib.md).
func EndedKey(key string) string { return companionKey("ended:", key) }

// CompanionsInSlot reports whether key's companion keys hash to key's Redis Cluster slot, so
// that one script may touch them all: always, unless key has no hash tag and contains '}',
// which would end the tag that companionKey adds early.
func CompanionsInSlot(key string) bool {
	return hasHashTag(key) || !strings.Contains(key, "}")
}

func companionKey(prefix, key string) string {
	if hasHashTag(key) {
		return prefix + key
	}
	return prefix + "{" + key + "}"
}

// hasHashTag applies Redis Cluster's rule: a '{' followed later by a '}' with at least one
// byte between the first '{' and the first '}' after it.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	close := strings.IndexByte(key[open+1:], '}')
	return close > 0
}
