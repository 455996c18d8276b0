package demo

import (
	"context"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// gateState is what a gate does to the Redis traffic through it.
type gateState int

const (
	gateOpen   gateState = iota
	gatePaused           // commands wait until the gate reopens: a process frozen by a GC pause
	gateDead             // commands fail at once: a crashed process, an unreachable server
)

// gate stands between a worker and Redis (a go-redis hook): every command of the worker,
// its watchdog's renewals included, passes through it. One gate per worker (crash, pause) and
// one per instance (the failover's partition when the demo cannot stop the server).
type gate struct {
	deadErr error // what commands fail with while dead

	mu      sync.Mutex
	state   gateState
	changed chan struct{} // closed and replaced on every state change
}

func newGate(deadErr error) *gate {
	return &gate{deadErr: deadErr, changed: make(chan struct{})}
}

// set moves the gate to s, waking everyone waiting on it. A dead gate stays dead.
func (g *gate) set(s gateState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == s || g.state == gateDead {
		return
	}
	g.state = s
	close(g.changed)
	g.changed = make(chan struct{})
}

// current is the state and a channel closed at the next change.
func (g *gate) current() (gateState, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state, g.changed
}

func (g *gate) is(s gateState) bool {
	st, _ := g.current()
	return st == s
}

// pass returns nil once the gate is open: at once when open, after the pause while paused,
// deadErr when dead, the context's error if it ends first.
func (g *gate) pass(ctx context.Context) error {
	for {
		st, changed := g.current()
		switch st {
		case gateOpen:
			return nil
		case gateDead:
			return g.deadErr
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// gateHook makes a go-redis client pass its gates before every dial, command and pipeline.
type gateHook []*gate

func (h gateHook) pass(ctx context.Context) error {
	for _, g := range h {
		if err := g.pass(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (h gateHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		if err := h.pass(ctx); err != nil {
			return nil, err
		}
		return next(ctx, network, addr)
	}
}

func (h gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.pass(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.pass(ctx); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}
