package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
)

// Comparison is `lockscope demo --compare`: a locklib run and a naive run of the same Config
// at the same time, on the same servers under their own keys (lock:demo:* and lock:naive:*).
// Concurrent rather than one after the other, so that the two share the machine's load, the
// server and the clock: both are in the same phase at the same moment, and the console shows
// them side by side live. Both runs draw from the same seed.
type Comparison struct {
	LockLib *Controller
	Naive   *Controller
}

// StartComparison starts both runs of cfg (its Lock is ignored).
func StartComparison(cfg Config) (*Comparison, error) {
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	cfg.Lock = LockLib
	lib, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Lock = Naive
	naive, err := Start(cfg)
	if err != nil {
		lib.Stop()
		return nil, err
	}
	return &Comparison{LockLib: lib, Naive: naive}, nil
}

// Done is closed when the runs' Duration has passed (both started together with the same one).
func (p *Comparison) Done() <-chan struct{} { return p.LockLib.Done() }

// Stop stops both runs at once (neither goes on while the other winds down) and returns
// their summaries.
func (p *Comparison) Stop() ComparisonSummary {
	var s ComparisonSummary
	var wg sync.WaitGroup
	wg.Go(func() { s.Naive = p.Naive.Stop() })
	s.LockLib = p.LockLib.Stop()
	wg.Wait()
	return s
}

// RemoveKeys removes what both runs left (Controller.RemoveKeys).
func (p *Comparison) RemoveKeys() error {
	return errors.Join(p.LockLib.RemoveKeys(), p.Naive.RemoveKeys())
}

// ComparisonSummary is both runs' results: the JSON of `demo --compare --headless --json`.
type ComparisonSummary struct {
	LockLib Summary `json:"locklib"`
	Naive   Summary `json:"naive"`
}

// WriteJSON writes s as one JSON object, {"locklib": {...}, "naive": {...}}.
func (s ComparisonSummary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText writes both runs' tables and verdicts, then the comparison in one line each.
func (s ComparisonSummary) WriteText(w io.Writer) error {
	for _, run := range []Summary{s.LockLib, s.Naive} {
		if err := run.WriteText(w); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "compare:         %8s %8s\n"+
		"overlaps         %8d %8d\n"+
		"stale accepted   %8d %8d\n"+
		"stale rejected   %8d %8d\n"+
		"no ttl           %8d %8d\n"+
		"sections         %8d %8d\n",
		LockLib, Naive,
		s.LockLib.Overlaps, s.Naive.Overlaps,
		s.LockLib.StaleAccepted, s.Naive.StaleAccepted,
		s.LockLib.StaleRejected, s.Naive.StaleRejected,
		s.LockLib.NoTTLLocks, s.Naive.NoTTLLocks,
		s.LockLib.Sections, s.Naive.Sections)
	return err
}
