package locklib

import (
	"context"
	"encoding/json"
	"time"
)

// eventPublisher is implemented by stores that can publish events sent from Go (lost,
// renew_failed: those may happen with the server unreachable, so no script sends them).
type eventPublisher interface {
	publishEvent(ctx context.Context, payload []byte) error
}

// publish sends e on EventsChannel, best effort and bounded by publishTimeout.
func (c *Client) publish(e Event) {
	if !c.cfg.events {
		return
	}
	p, ok := c.store.(eventPublisher)
	if !ok {
		return
	}
	if e.AtMs == 0 {
		e.AtMs = time.Now().UnixMilli()
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	_ = p.publishEvent(ctx, payload)
}

func (c *Client) renewFailed(l *Lock, latency time.Duration, err error) {
	c.observe(Observation{Type: EventRenewFailed, Key: l.h.key, Latency: latency, Err: err})
	c.publish(Event{Type: EventRenewFailed, Key: l.h.key, Value: l.value, Node: c.cfg.node, Trace: l.trace,
		Token: l.token, Reason: err.Error()})
}

// eventPrefix is e as JSON without its closing brace: a script appends the fields only it
// knows (token, waiters, ttl_ms) and closes it.
func eventPrefix(e Event) string {
	b, err := json.Marshal(e)
	if err != nil {
		return ""
	}
	return string(b[:len(b)-1])
}
