package scanner

import (
	"context"
	"sync"
	"time"

	"github.com/lockscope/lockscope/connect"
)

// pacer keeps a background re-scan to a share (the budget) of a server's time. Steps (a SCAN
// call, a batch of reads) run one at a time through a gate, and after a step that took d the
// gate stays shut for d×(1-budget)/budget: the server is then busy with the re-scan at most
// budget of the time. A step's wall time (round trip and client decoding included) is more
// than the server spent on it, so the real share is lower.
type pacer struct {
	budget float64
	gate   chan struct{} // holds a token while a step runs or the gate rests
	next   time.Time     // the gate opens again at this time; guarded by the token
}

func newPacer(budget float64) *pacer {
	return &pacer{budget: budget, gate: make(chan struct{}, 1)}
}

// step waits for the gate, runs f and shuts the gate for f's share of rest.
func (g *pacer) step(ctx context.Context, f func() error) error {
	select {
	case g.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.gate }()
	if wait := time.Until(g.next); wait > 0 && !sleepCtx(ctx, wait) {
		return ctx.Err()
	}
	start := time.Now()
	err := f()
	took := time.Since(start)
	rest := float64(took) * (1 - g.budget) / g.budget
	// A tiny budget's rest overflows a Duration, whose conversion is then no rest at all.
	g.next = time.Now().Add(time.Duration(min(rest, float64(maxRest))))
	return err
}

// maxRest bounds the gate's rest after a step.
const maxRest = 24 * time.Hour

// pacers are one pass's gates: one per server scanned, except for Redlock, where every
// walk reads every instance, so one gate for the whole pass keeps each instance within the
// budget.
type pacers struct {
	budget float64
	shared bool
	mu     sync.Mutex
	gates  map[string]*pacer
}

func newPacers(budget float64, mode connect.Mode) *pacers {
	return &pacers{budget: budget, shared: mode == connect.Redlock, gates: map[string]*pacer{}}
}

// pace is sink.pace.
func (ps *pacers) pace(ctx context.Context, addr string, f func() error) error {
	if ps.shared {
		addr = ""
	}
	ps.mu.Lock()
	g := ps.gates[addr]
	if g == nil {
		g = newPacer(ps.budget)
		ps.gates[addr] = g
	}
	ps.mu.Unlock()
	return g.step(ctx, f)
}
