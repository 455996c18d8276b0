// Package exporter is `lockscope exporter`'s core: it follows the live census (the scanner's
// Watch) into a compact per-lock table, and serves it as Prometheus metrics (/metrics) and
// as a health check (/healthz). A scrape never reads Redis: it aggregates the table as the
// stream left it. docs/exporter.md lists the metrics.
package exporter

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// Options configure an Exporter. Zero fields take the defaults below.
type Options struct {
	Rule       keygroup.Rule // default keygroup.Default
	MaxGroups  int           // distinct group labels before folding into keygroup.Other; default DefaultMaxGroups
	StuckAfter time.Duration // a lock held longer is stuck; default present.DefaultStuckAfter
	// CensusMaxAge is how old the last complete census pass may be before /healthz fails;
	// default DefaultCensusMaxAge.
	CensusMaxAge time.Duration
	Version      string // the exporter_info version label
	// Log receives the scanner's warnings (each once), a failed pass (not again while the
	// passes fail alike) and the first pass that ends after failures, with the target's
	// passwords removed. Nil: dropped.
	Log func(msg string)
	Now func() time.Time // default time.Now
}

// Defaults of Options.
const (
	DefaultMaxGroups    = 100
	DefaultCensusMaxAge = 10 * time.Minute
)

// silentAfter is how long a server may go without answering a heartbeat before it counts as
// down: three of the scanner's heartbeats.
const silentAfter = 3 * scanner.HeartbeatEvery

// Exporter keeps the census of one target as metrics. Apply feeds it the
// scanner's stream; WriteMetrics and Health read it, from any goroutine.
type Exporter struct {
	opts   Options
	mode   connect.Mode
	redact func(string) string
	start  time.Time

	mu     sync.Mutex
	census *census
	clocks scanner.Clocks
	// servers are the target's servers now, by address, with their last heartbeat answer
	// (zero: none yet). A cluster master leaves when the scanner says it is no longer one
	// (forgotten: only its heartbeat brings it back, not a stale list of followed servers).
	servers   map[string]time.Time
	forgotten map[string]bool
	errors    map[string]uint64 // by every address a failure was counted against
	passGen   uint64            // the newest pass that ended
	passes    uint64
	// lastComplete is when the last pass that read every server ended; lastDuration and
	// partial describe the last pass that ended at all.
	lastComplete time.Time
	lastDuration time.Duration
	partial      bool
	failed       string // why the last pass failed, "" once a later one ends
}

// New is an Exporter of target's census.
func New(target connect.Target, opts Options) *Exporter {
	if opts.Rule.String() == "" { // the zero Rule
		opts.Rule = keygroup.Default
	}
	if opts.MaxGroups <= 0 {
		opts.MaxGroups = DefaultMaxGroups
	}
	if opts.StuckAfter <= 0 {
		opts.StuckAfter = present.DefaultStuckAfter
	}
	if opts.CensusMaxAge <= 0 {
		opts.CensusMaxAge = DefaultCensusMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Exporter{opts: opts, mode: target.Mode, redact: target.Redact, start: opts.Now(),
		census: newCensus(opts.Rule, min(opts.MaxGroups, maxGroups), target.Mode == connect.Independent),
		clocks: scanner.Clocks{}, servers: map[string]time.Time{}, forgotten: map[string]bool{}, errors: map[string]uint64{},
	}
	// A cluster's masters are learnt from the stream; the other targets' servers are known
	// now, and one that never answers must show as down.
	if target.Mode != connect.Cluster {
		for i := range target.Addrs {
			if addr := target.ServerAddr(i); addr != "" {
				e.servers[addr] = time.Time{}
			}
		}
	}
	return e
}

// role is the server_up role label of the servers of a target of mode m.
func role(m connect.Mode) string {
	switch m {
	case connect.Cluster, connect.Sentinel:
		return "master"
	case connect.Redlock:
		return "redlock"
	case connect.Independent:
		return "independent"
	}
	return "standalone"
}

// Apply takes one update of the scanner's Watch into the census.
func (e *Exporter) Apply(u scanner.Update) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch u.Kind {
	case scanner.UpdateBatch:
		e.census.apply(u.Locks, u.Gen, e.ahead)
	case scanner.UpdatePassDone:
		e.passDone(u.Gen, u.Census)
	case scanner.UpdateError:
		if text := u.ErrText(); text != e.failed { // not again for each pass that fails alike
			e.failed = text
			e.log("census pass failed: " + text)
		}
		e.countError(u.Addr)
	case scanner.UpdateRetrying:
		e.countError(u.Addr)
	case scanner.UpdateWarning:
		e.log("warning: " + u.Warning)
	case scanner.UpdateFollowing:
		for _, sf := range u.Following.Servers {
			if _, known := e.servers[sf.Addr]; !known && !e.forgotten[sf.Addr] {
				e.servers[sf.Addr] = time.Time{}
			}
		}
	case scanner.UpdateClock:
		if u.Clock.Answered.IsZero() { // no longer a server of the target
			delete(e.servers, u.Addr)
			delete(e.clocks, u.Addr)
			e.forgotten[u.Addr] = true
			return
		}
		e.servers[u.Addr] = u.Clock.Answered
		e.clocks[u.Addr] = u.Clock
		delete(e.forgotten, u.Addr)
	}
}

func (e *Exporter) passDone(gen uint64, c scanner.Census) {
	if gen < e.passGen {
		return // a pass older than one already ended
	}
	e.passGen = gen
	e.passes++
	if e.failed != "" {
		e.log("census pass ended again")
	}
	// c.Warnings came as UpdateWarnings already, each once for the whole Watch.
	e.lastDuration, e.partial, e.failed = c.Duration, len(c.Missing) > 0, ""
	for _, addr := range c.Missing {
		e.errors[addr]++
	}
	// A pass that missed a server proves nothing about the locks it did not see: they stay.
	if !e.partial {
		e.census.prune(gen)
		e.lastComplete = e.opts.Now()
	}
}

// countError counts a failure against server addr, or against every known server when the
// failure names none (the pass as a whole failed).
func (e *Exporter) countError(addr string) {
	if addr != "" {
		e.errors[addr]++
		return
	}
	for addr := range e.servers {
		e.errors[addr]++
	}
}

// ahead is how far l's server clock is ahead of the local clock: a stamp in l's value is on
// that clock.
func (e *Exporter) ahead(l *scanner.Lock) time.Duration {
	var local time.Time
	return e.clocks.Now(l, local).Sub(local)
}

func (e *Exporter) log(msg string) {
	if e.opts.Log != nil {
		e.opts.Log(e.redact(msg))
	}
}

// Health says whether the census is current: a pass has ended, the last one did not fail,
// every server answers its heartbeats, and the last complete pass is at most CensusMaxAge
// old. reason says why not, in one line.
func (e *Exporter) Health() (ok bool, reason string) {
	now := e.opts.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed != "" {
		return false, "the last census pass failed: " + e.failed
	}
	addrs := make([]string, 0, len(e.servers))
	for addr := range e.servers {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	for _, addr := range addrs {
		heard := e.servers[addr]
		if heard.IsZero() {
			heard = e.start
		}
		if silent := now.Sub(heard); silent > silentAfter {
			return false, fmt.Sprintf("server %s has not answered for %s", addr, silent.Round(time.Second))
		}
	}
	switch {
	case e.passes == 0:
		return false, "no census yet: the first pass has not ended"
	case e.lastComplete.IsZero():
		return false, "no complete census yet: every pass missed a server"
	}
	if age := now.Sub(e.lastComplete); age > e.opts.CensusMaxAge {
		return false, fmt.Sprintf("the last complete census pass ended %s ago (limit %s)", age.Round(time.Second), e.opts.CensusMaxAge)
	}
	return true, "ok"
}
