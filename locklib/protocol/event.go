package protocol

// Event is one lock lifecycle event, as published on EventsChannel (JSON field names fixed).
// Type is the name of a locklib.EventType ("waiting", "acquired", "renewed", "renew_failed",
// "released", "lost"): locklib owns that vocabulary, which its Observer sees too.
type Event struct {
	Type  string `json:"type"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"` // the holder's value, when known (a lease set's member, when Mode is set)
	// Mode is set for the kinds that are not a plain lock: "read", "write" (a read-write
	// lock's level), "permit" (a lease semaphore's), "multi" (one key of a multi-key lock).
	// Value is then no string stored at Key: readers re-read the key.
	Mode    string `json:"mode,omitempty"`
	Node    string `json:"node,omitempty"`    // the client's node
	Trace   string `json:"trace,omitempty"`   // the lock's trace id
	Token   int64  `json:"token,omitempty"`   // fencing token, when there is one
	TTLMs   int64  `json:"ttl_ms,omitempty"`  // TTL asked for or granted
	WaitMs  int64  `json:"wait_ms,omitempty"` // acquired: how long Obtain waited
	HoldMs  int64  `json:"hold_ms,omitempty"` // released/lost: how long it was held
	Waiters int64  `json:"waiters,omitempty"` // waiters queued on the key, when known
	Reason  string `json:"reason,omitempty"`  // renew_failed/lost: why
	AtMs    int64  `json:"at_ms"`             // unix milliseconds when it happened
}
