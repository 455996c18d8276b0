// Package protocol is locklib's wire protocol: what a lock looks like in Redis and on its
// pub/sub channels, for every program that reads or changes locklib's locks besides locklib
// itself (lockscope's scanner, TUI and force-release). Using locklib needs none of it.
//
// It owns the value format (Value, ParseValue), the companion keys of a lock key and their
// hash-tag rule (FenceKey, WaitQueueKey, ..., and LockKeyOf back), the wait-queue entries (QueueEntry), the
// channels (EventsChannel, WakeChannelPrefix, RedlockReleasedChannel), the event payload
// (Event), and the Lua library every lockscope script prepends (LuaLibrary), so that the
// server-side half of the format is written once too. docs/value-format.md is the reference.
package protocol

// The pub/sub channels. LuaLibrary defines the same names for the scripts (EVENTS, WAKE,
// REDLOCK_RELEASED), from these constants.
const (
	// EventsChannel carries lock lifecycle events (JSON-encoded Event), so the inspector can
	// show them live. Publishing is best effort.
	EventsChannel = "lockscope:events"

	// WakeChannelPrefix + a client id is the channel that client's waiters are woken on, with
	// "<waiter id>\n<key>" (the waiter id is the first field of its QueueEntry). A tool that
	// deletes a lock on its holder's behalf (the inspector's force-release) wakes the queue's
	// head there too (LuaLibrary's wakeLiveHead), so it does not wait for its next poll.
	WakeChannelPrefix = "lockscope:wake:"

	// RedlockReleasedChannel carries "<key>\n<value>" for every Redlock lock deleted by a
	// release, on each instance: Redlock keeps no wait queue to pick one waiter from.
	RedlockReleasedChannel = "lockscope:redlock:released"
)
