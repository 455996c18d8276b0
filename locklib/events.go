package locklib

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Lifecycle events are published on protocol.EventsChannel, best effort. The single-instance
// store's scripts publish most of them (the JSON prefix built here, eventPrefix); Redlock
// publishes from Go after the quorum decided (redlockEvents).

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

// publishPerKey publishes e about l on each of its keys (one, but for a multi-key lock).
func (c *Client) publishPerKey(l *Lock, e protocol.Event) {
	for _, key := range l.Keys() {
		e.Key = key
		c.publish(e)
	}
}

func (c *Client) renewFailed(l *Lock, latency time.Duration, err error) {
	c.observe(Observation{Type: EventRenewFailed, Key: l.h.key, Latency: latency, Err: err})
	c.publishPerKey(l, protocol.Event{Type: string(EventRenewFailed), Value: l.value, Mode: l.h.kind.eventMode(),
		Node: c.cfg.node, Trace: l.trace, Token: l.token, Reason: err.Error()})
}

// eventPrefix is e as JSON without its closing brace: a script appends the fields only it
// knows (token, waiters, ttl_ms) and closes it. It is json.Marshal's output
// (TestEventPrefixIsMarshal), written without reflection in one allocation: every acquire
// and release builds one or two.
func eventPrefix(e protocol.Event) string {
	var sb strings.Builder
	sb.Grow(160 + len(e.Key) + len(e.Value) + len(e.Node) + len(e.Trace) + len(e.Reason))
	field := func(name, v string, always bool) {
		if v != "" || always {
			sb.WriteString(name)
			writeJSONString(&sb, v)
		}
	}
	number := func(name string, v int64, always bool) {
		if v != 0 || always {
			var digits [20]byte
			sb.WriteString(name)
			sb.Write(strconv.AppendInt(digits[:0], v, 10))
		}
	}
	field(`{"type":`, e.Type, true)
	field(`,"key":`, e.Key, true)
	field(`,"value":`, e.Value, false)
	field(`,"mode":`, e.Mode, false)
	field(`,"node":`, e.Node, false)
	field(`,"trace":`, e.Trace, false)
	number(`,"token":`, e.Token, false)
	number(`,"ttl_ms":`, e.TTLMs, false)
	number(`,"wait_ms":`, e.WaitMs, false)
	number(`,"hold_ms":`, e.HoldMs, false)
	number(`,"waiters":`, e.Waiters, false)
	field(`,"reason":`, e.Reason, false)
	number(`,"at_ms":`, e.AtMs, true)
	return sb.String()
}

// writeJSONString writes s as a JSON string, as json.Marshal does: printable ASCII as it is,
// anything else (control bytes, non-ASCII, and the <, >, & that json.Marshal escapes) by
// json.Marshal itself.
func writeJSONString(sb *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			sb.Write(q)
			return
		}
	}
	sb.WriteByte('"')
	sb.WriteString(s)
	sb.WriteByte('"')
}

// holderEvent is an event about the holder of value (released, renewed).
// For a lease, value is its member (protocol.LeaseMember), and the event carries its mode.
func holderEvent(t EventType, key, value string) protocol.Event {
	e := protocol.Event{Type: string(t), Key: key, Value: value}
	if m, ok := protocol.ParseLeaseMember(value); ok {
		e.Mode = m.Mode.String()
		value = m.Value.String()
	}
	if v, err := protocol.ParseValue(value); err == nil {
		e.Node, e.Trace = v.Node, v.Trace
		if t == EventReleased {
			e.HoldMs = time.Since(v.AcquiredAt).Milliseconds()
		}
	}
	return e
}

// publishEvent publishes e in the background, bounded by publishTimeout when the client
// bounds reads by the context (and by its ReadTimeout otherwise).
func (s *singleStore) publishEvent(e protocol.Event) {
	payload, err := json.Marshal(e)
	if err != nil {
		return
	}
	s.calls.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
		defer cancel()
		_ = s.rdb.Publish(ctx, protocol.EventsChannel, payload).Err()
	})
}

// holderEventPrefix is the JSON prefix of an event about the holder of value, for a script.
func holderEventPrefix(t EventType, key, value string) string {
	e := holderEvent(t, key, value)
	e.AtMs = time.Now().UnixMilli()
	return eventPrefix(e)
}

// Redlock publishes its lifecycle events from Go, after the quorum decided (no single
// instance knows whether a lock was obtained, renewed or released), with the same payload on
// every instance, so an inspector watching any one instance sees them all and one watching
// several can drop the copies. They go through one ordered queue per Client, in the
// background and in batches: a lock operation never waits for them. A waiting event's
// waiters count is this Client's own waiters on the key: Redlock keeps no shared queue.

// redlockEvents is a Client's event queue and its publishing goroutine (started lazily).
type redlockEvents struct {
	clients []redis.UniversalClient

	mu     sync.Mutex
	queue  chan []byte
	stop   context.CancelFunc
	done   chan struct{}
	closed bool
}

// redlockEventQueue bounds the backlog: when the instances are slower than the events, newer
// events are dropped (best effort, like every event).
const redlockEventQueue = 1024

func (p *redlockEvents) send(e protocol.Event) {
	if e.AtMs == 0 {
		e.AtMs = time.Now().UnixMilli()
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.queue == nil {
		ctx, stop := context.WithCancel(context.Background())
		p.queue, p.stop, p.done = make(chan []byte, redlockEventQueue), stop, make(chan struct{})
		go p.run(ctx, p.queue)
	}
	select {
	case p.queue <- payload:
	default:
	}
}

// run publishes what is queued, in order: each batch pipelined to every instance in parallel.
func (p *redlockEvents) run(ctx context.Context, queue chan []byte) {
	defer close(p.done)
	for ctx.Err() == nil {
		var batch [][]byte
		select {
		case payload := <-queue:
			batch = append(batch, payload)
		case <-ctx.Done():
			return
		}
		for more := true; more && len(batch) < 64; {
			select {
			case payload := <-queue:
				batch = append(batch, payload)
			default:
				more = false
			}
		}
		var wg sync.WaitGroup
		for _, c := range p.clients {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, publishTimeout)
				defer cancel()
				pipe := c.Pipeline()
				for _, payload := range batch {
					pipe.Publish(pctx, protocol.EventsChannel, payload)
				}
				_, _ = pipe.Exec(pctx)
			})
		}
		wg.Wait()
	}
}

// close stops publishing (events still queued are dropped) and waits for the goroutine.
func (p *redlockEvents) close() {
	p.mu.Lock()
	p.closed = true
	stop, done := p.stop, p.done
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// publishEvent queues an event sent by the Client (lost, renew_failed) for every instance.
func (s *redlockStore) publishEvent(e protocol.Event) { s.publish(e) }

// publish queues e when events are on.
func (s *redlockStore) publish(e protocol.Event) {
	if s.events {
		s.eventQueue.send(e)
	}
}
