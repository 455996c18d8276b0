package protocol

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// QueueEntry is a waiter's member in the wait queue of a lock key (WaitQueueKey):
// "<waiter id>|<ttl ms>|<value>", where the waiter id is "<client id>:<n>". The entry says whom
// to wake (WakeChannelPrefix + client id) and, for a hand-off by a release of the same
// client, what to write. LuaLibrary's entryParts reads it on the server.
func QueueEntry(waiterID string, ttl time.Duration, value string) string {
	return waiterID + "|" + strconv.FormatInt(ttl.Milliseconds(), 10) + "|" + value
}

// ParseQueueEntry splits a queue entry; ok is false for anything else.
func ParseQueueEntry(entry string) (waiterID string, ttl time.Duration, value string, ok bool) {
	waiterID, rest, ok1 := strings.Cut(entry, "|")
	ttlText, value, ok2 := strings.Cut(rest, "|")
	ms, err := strconv.ParseInt(ttlText, 10, 64)
	if !ok1 || !ok2 || err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return "", 0, "", false
	}
	return waiterID, time.Duration(ms) * time.Millisecond, value, true
}
