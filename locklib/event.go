package locklib

// EventsChannel is the pub/sub channel on which locklib publishes lock lifecycle events
// (JSON-encoded Event), so the inspector can show them live. Publishing is best effort.
const EventsChannel = "lockscope:events"

// EventType names a lifecycle event.
type EventType string

// The lifecycle events published on EventsChannel and passed to an Observer.
const (
	EventWaiting     EventType = "waiting"      // an Obtain started to wait for a held lock
	EventAcquired    EventType = "acquired"     // a lock was obtained (or re-entered)
	EventRenewed     EventType = "renewed"      // the watchdog or Refresh extended a lock
	EventRenewFailed EventType = "renew_failed" // a renewal was refused or failed
	EventReleased    EventType = "released"     // a lock was released (or a re-entry left)
	EventLost        EventType = "lost"         // a lock is known or presumed lost
)

// Event is one lifecycle event, as published on EventsChannel (JSON field names fixed).
type Event struct {
	Type    EventType `json:"type"`
	Key     string    `json:"key"`
	Value   string    `json:"value,omitempty"`   // the holder's value, when known
	Node    string    `json:"node,omitempty"`    // the client's node
	Trace   string    `json:"trace,omitempty"`   // the lock's trace id
	Token   int64     `json:"token,omitempty"`   // fencing token, when there is one
	TTLMs   int64     `json:"ttl_ms,omitempty"`  // TTL asked for or granted
	WaitMs  int64     `json:"wait_ms,omitempty"` // acquired: how long Obtain waited
	HoldMs  int64     `json:"hold_ms,omitempty"` // released/lost: how long it was held
	Waiters int64     `json:"waiters,omitempty"` // waiters queued on the key, when known
	Reason  string    `json:"reason,omitempty"`  // renew_failed/lost: why
	AtMs    int64     `json:"at_ms"`             // unix milliseconds when it happened
}
