package locklib

import (
	"encoding/json"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// eventPublisher is implemented by stores that publish events sent from Go (lost,
// renew_failed: those may happen with the server unreachable, so no script sends them).
// publishEvent must not wait for the server: the watchdog and lose call it, and Release
// waits for the watchdog.
type eventPublisher interface {
	publishEvent(e protocol.Event)
}

// publish sends e on protocol.EventsChannel, best effort.
func (c *Client) publish(e protocol.Event) {
	if !c.cfg.events {
		return
	}
	if p, ok := c.store.(eventPublisher); ok {
		if e.AtMs == 0 {
			e.AtMs = time.Now().UnixMilli()
		}
		p.publishEvent(e)
	}
}

func (c *Client) renewFailed(l *Lock, latency time.Duration, err error) {
	c.observe(Observation{Type: EventRenewFailed, Key: l.h.key, Latency: latency, Err: err})
	c.publish(protocol.Event{Type: string(EventRenewFailed), Key: l.h.key, Value: l.value, Node: c.cfg.node, Trace: l.trace,
		Token: l.token, Reason: err.Error()})
}

// eventPrefix is e as JSON without its closing brace: a script appends the fields only it
// knows (token, waiters, ttl_ms) and closes it.
func eventPrefix(e protocol.Event) string {
	b, err := json.Marshal(e)
	if err != nil {
		return ""
	}
	return string(b[:len(b)-1])
}
