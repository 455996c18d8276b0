package locklib

import "strings"

// Companion keys live in the same Redis Cluster slot as their lock key, so one Lua script can
// touch both, and never match the lock pattern `lock:*`, so a census does not count them.
//
//	key                  FenceKey                  WaitQueueKey              WaitPresenceKey
//	lock:order:1001      fence:{lock:order:1001}   waitq:{lock:order:1001}   waitp:{lock:order:1001}
//	lock:{order}:1001    fence:lock:{order}:1001   waitq:lock:{order}:1001   waitp:lock:{order}:1001
//
// A key that already has a hash tag keeps it (the prefix does not move the tag); any other
// key becomes the tag. docs/value-format.md states the rule for other readers.

// FenceKey is the key of the fencing-token counter of lock key.
func FenceKey(key string) string { return companionKey("fence:", key) }

// WaitQueueKey is the key of the FIFO queue of waiters of lock key (a sorted set).
func WaitQueueKey(key string) string { return companionKey("waitq:", key) }

// WaitPresenceKey is the key of the presence deadlines of WaitQueueKey's waiters (a sorted
// set scored by the unix ms after which a waiter that made no new attempt is dropped).
func WaitPresenceKey(key string) string { return companionKey("waitp:", key) }

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
