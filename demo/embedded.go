package demo

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
)

// Embedded is N in-process Redis-compatible servers (miniredis) on loopback ports, so the demo
// runs on a machine without Redis and never writes into anybody's Redis unasked. The scanner
// and the TUI read them over TCP like any Redis.
//
// By default miniredis's TTLs only move when FastForward is called, while its TIME is the wall
// clock: driven by a ticker, a TTL lagged the clock that stamped the value by a tick or more
// (a 2 s lock read 2.1 s left when fresh). Embedded servers run with ClockTTL instead: every
// command counts TTLs down by the wall clock, the clock TIME reads, so PTTL and TIME agree and
// keys expire on time (never early: early would hand a lock to two holders).
type Embedded struct {
	addrs []string

	mu      sync.Mutex
	servers []*miniredis.Miniredis // nil while an instance is stopped (failover)

	closeOnce sync.Once
}

// newServer starts an embedded server on addr with TTLs on the wall clock.
func newServer(addr string) (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, err
	}
	return m, nil
}

// StartEmbedded starts n servers on free loopback ports.
func StartEmbedded(n int) (*Embedded, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d embedded servers", ErrBadConfig, n)
	}
	e := &Embedded{servers: make([]*miniredis.Miniredis, n)}
	for i := range e.servers {
		m, err := newServer("127.0.0.1:0")
		if err != nil {
			e.closeServers()
			return nil, fmt.Errorf("demo: start embedded server: %w", err)
		}
		e.servers[i] = m
		e.addrs = append(e.addrs, m.Addr())
	}
	return e, nil
}

// Addrs are the servers' addresses (host:port), fixed for the servers' lifetime.
func (e *Embedded) Addrs() []string { return append([]string(nil), e.addrs...) }

// Label names the servers for a status bar.
func (e *Embedded) Label() string {
	if len(e.addrs) == 1 {
		return "embedded miniredis " + e.addrs[0]
	}
	return fmt.Sprintf("%d embedded miniredis (Redlock) %s", len(e.addrs), strings.Join(e.addrs, ","))
}

// Servers are these servers as the demo's; redlock makes the workers use all of them as
// one Redlock deployment (with one server it is always single-instance).
func (e *Embedded) Servers(redlock bool) Servers {
	return Servers{
		Label:   e.Label(),
		Addrs:   e.Addrs(),
		Redlock: redlock && len(e.addrs) > 1,
		Dial:    func(i int) redis.UniversalClient { return redis.NewClient(embeddedClientOptions(e.addrs[i])) },
		Faults:  e,
	}
}

// Inspect is a connect.Target on these servers, for the scanner and the console: one
// standalone server, or with redlock a Redlock set. The caller closes it.
func (e *Embedded) Inspect(redlock bool) connect.Target {
	t := connect.Target{Mode: connect.Standalone, Addrs: e.Addrs()}
	if redlock && len(e.addrs) > 1 {
		t.Mode = connect.Redlock
	}
	for _, addr := range e.addrs {
		t.Clients = append(t.Clients, redis.NewClient(embeddedClientOptions(addr)))
	}
	return t
}

// embeddedClientOptions are client options suited to an embedded server: short timeouts (a
// stopped instance must fail fast for Redlock), one retry (a pooled connection is dead after
// a restart), RESP2 (miniredis has no HELLO).
func embeddedClientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:         addr,
		Protocol:     2,
		DialTimeout:  250 * time.Millisecond,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
		MaxRetries:   1,
		PoolSize:     4,
	}
}

// StopInstance closes server i: connections drop, new ones are refused.
func (e *Embedded) StopInstance(i int) error {
	e.mu.Lock()
	m := e.servers[i]
	e.servers[i] = nil
	e.mu.Unlock()
	if m == nil {
		return fmt.Errorf("demo: embedded instance %d is already stopped", i)
	}
	m.Close()
	return nil
}

// RestartEmpty starts a fresh, empty server on instance i's address (stopping it first if
// needed): no keys, no scripts, like a Redis restarted without persistence.
func (e *Embedded) RestartEmpty(i int) error {
	e.mu.Lock()
	old := e.servers[i]
	e.servers[i] = nil
	e.mu.Unlock()
	if old != nil {
		old.Close()
	}
	var err error
	// The port was ours a moment ago; a short retry covers a slow socket teardown.
	for attempt := 0; attempt < 40; attempt++ {
		var m *miniredis.Miniredis
		if m, err = newServer(e.addrs[i]); err == nil {
			e.mu.Lock()
			e.servers[i] = m
			e.mu.Unlock()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("demo: restart embedded instance %d on %s: %w", i, e.addrs[i], err)
}

// Close stops every server.
func (e *Embedded) Close() {
	e.closeOnce.Do(e.closeServers)
}

func (e *Embedded) closeServers() {
	e.mu.Lock()
	servers := e.servers
	e.servers = make([]*miniredis.Miniredis, len(servers))
	e.mu.Unlock()
	for _, m := range servers {
		if m != nil {
			m.Close()
		}
	}
}
