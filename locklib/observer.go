package locklib

import (
	"context"
	"time"
)

// EventType names a lock lifecycle step: the Type of an Observation, and of the events
// published on protocol.EventsChannel (protocol.Event, whose Type is its string).
type EventType string

// The lifecycle steps, observed and published.
const (
	EventWaiting     EventType = "waiting"      // an Obtain started to wait for a held lock
	EventAcquired    EventType = "acquired"     // a lock was obtained (or re-entered)
	EventRenewed     EventType = "renewed"      // the watchdog or Refresh extended a lock
	EventRenewFailed EventType = "renew_failed" // a renewal was refused or failed
	EventReleased    EventType = "released"     // a lock was released (or a re-entry left)
	EventLost        EventType = "lost"         // a lock is known or presumed lost
)

// EventNotObtained is an Observation type only (never published): an Obtain or TryObtain
// gave up; Err says why (taken, context ended, backend error).
const EventNotObtained EventType = "not_obtained"

// Observation is one lock lifecycle step as seen by this client, passed to the WithObserver
// function for metrics (acquire latency, wait time, hold time, renewals, losses).
type Observation struct {
	Type     EventType
	Key      string
	Token    int64         // acquired: the fencing token (0 when the store has none)
	Waiters  int64         // queue length reported by the script, when known
	Attempts int           // acquired / not_obtained: attempts made by this Obtain
	Wait     time.Duration // acquired / not_obtained: time since Obtain began; waiting: 0
	Hold     time.Duration // released / lost: time since acquisition
	Latency  time.Duration // the Redis call behind this step (attempt, renewal, release)
	TTL      time.Duration // renewed: the TTL Redis reports after the renewal
	Err      error         // renew_failed / lost / not_obtained: why; released: Release's result
	// WasLost is set on released when the lock had been lost before (its lost Observation
	// came first, or comes at the same time from another goroutine): a gauge of held locks
	// counts the lock down once, at whichever of the two it sees first.
	WasLost bool
}

func (c *Client) observe(o Observation) {
	if c.cfg.observer != nil {
		c.cfg.observer(o)
	}
}

// Tracer is WithTracer's hook around each Obtain, TryObtain and Release call. It is called
// as the call begins (after its arguments are checked) with the caller's context, the call
// ("Obtain", "TryObtain", "Release", or another kind's method: "ObtainRead",
// "TryObtainWrite"...) and the key. It returns the context the call's Redis
// requests run under (derived from ctx, e.g. with a span started in it) and end, which the
// call runs once, as it returns, with the Observation that concludes it: acquired or
// not_obtained, or released. A call refused before it reaches Redis (ErrInvalid, a second
// Release) makes no span. Like the observer, both run on the caller's goroutine and must
// not block.
type Tracer func(ctx context.Context, call, key string) (context.Context, func(Observation))

func noEnd(Observation) {}

// startCall runs the Tracer, if any, as a call begins.
func (c *Client) startCall(ctx context.Context, call, key string) (context.Context, func(Observation)) {
	if c.cfg.tracer == nil {
		return ctx, noEnd
	}
	return c.cfg.tracer(ctx, call, key)
}
