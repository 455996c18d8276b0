package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/present"
)

// Summary is the result of a run: the JSON of `lockscope demo --headless --json`. The
// top-level fields sections, overlaps, stale_rejected, expired_after_crash, wait_p50_ms and
// wait_p99_ms are fixed; Verdict judges it (unsafe: overlaps or stale_accepted above 0).
type Summary struct {
	Lock       Lock     `json:"lock"`
	UnsafeRun  bool     `json:"unsafe"` // Counters.Unsafe, for readers of the JSON
	Scenario   Scenario `json:"scenario"`
	Server     string   `json:"server"`
	Protection string   `json:"protection"`
	Workers    int      `json:"workers"`
	Resources  int      `json:"resources"`
	Permits    int      `json:"permits,omitempty"` // rw-pool: the pool's semaphore's size
	TTLMs      int64    `json:"ttl_ms"`
	DurationS  float64  `json:"duration_s"`

	Counters
	WaitP50Ms    float64 `json:"wait_p50_ms"`
	WaitP99Ms    float64 `json:"wait_p99_ms"`
	HandoffsPerS float64 `json:"handoffs_per_s"`

	Phases []PhaseSummary `json:"scenarios"` // one per scenario that ran, in phase order
	// PromotionLog is every failover of a failover-replica run: the tokens before, on the
	// promoted replica, and after.
	PromotionLog []Promotion `json:"promotion_log,omitempty"`
}

// PhaseSummary is what one scenario measured (in a mixed run: all its phases together).
type PhaseSummary struct {
	Scenario  Scenario `json:"scenario"`
	DurationS float64  `json:"duration_s"`
	Counters
	WaitP50Ms    float64 `json:"wait_p50_ms"`
	WaitP99Ms    float64 `json:"wait_p99_ms"`
	HandoffsPerS float64 `json:"handoffs_per_s"`
}

// Summary is the run's result so far (final after Stop).
func (c *Controller) Summary() Summary {
	elapsed := c.elapsed()
	counters, wait := c.checker.totals()
	c.mu.Lock()
	workers := len(c.workers)
	c.mu.Unlock()
	s := Summary{
		Lock:         c.cfg.Lock,
		UnsafeRun:    counters.Unsafe(),
		Scenario:     c.cfg.Scenario,
		Server:       c.cfg.Servers.Label,
		Protection:   c.protection.String(),
		Workers:      workers,
		Resources:    len(c.resources),
		TTLMs:        c.cfg.TTL.Milliseconds(),
		DurationS:    math.Round(elapsed.Seconds()*1000) / 1000,
		Counters:     counters,
		WaitP50Ms:    ms(wait.quantile(0.50)),
		WaitP99Ms:    ms(wait.quantile(0.99)),
		HandoffsPerS: perSecond(counters.Handoffs, elapsed),
	}
	s.PromotionLog = c.checker.promotionLog()
	if c.leases != nil {
		s.Permits = c.cfg.Permits
	}
	spent := c.phaseDurations(elapsed)
	for _, p := range c.phases {
		pc, pw := c.checker.phase(p)
		s.Phases = append(s.Phases, PhaseSummary{
			Scenario:     p,
			DurationS:    math.Round(spent[p].Seconds()*1000) / 1000,
			Counters:     pc,
			WaitP50Ms:    ms(pw.quantile(0.50)),
			WaitP99Ms:    ms(pw.quantile(0.99)),
			HandoffsPerS: perSecond(pc.Handoffs, spent[p]),
		})
	}
	return s
}

// phaseDurations is how long each phase ran in a run of length elapsed.
func (c *Controller) phaseDurations(elapsed time.Duration) map[Scenario]time.Duration {
	out := map[Scenario]time.Duration{}
	if len(c.phases) == 1 {
		out[c.phases[0]] = elapsed
		return out
	}
	cycle := c.cfg.PhaseLength * time.Duration(len(c.phases))
	full := elapsed / cycle
	rest := elapsed % cycle
	for _, p := range c.phases {
		out[p] = full * c.cfg.PhaseLength
		part := min(rest, c.cfg.PhaseLength)
		out[p] += part
		rest -= part
	}
	return out
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// perSecond is n per second of d, to two decimals.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*100) / 100
}

// ErrUnsafe is wrapped by Verdict's error: the checker saw the protection fail.
var ErrUnsafe = errors.New("demo: unsafe")

// Verdict is nil when the run was safe, else an error wrapping ErrUnsafe that says how it
// failed, in one line. It judges the naive lock as harshly as locklib: that it fails is the
// point of running it (the CLI exits 10 only for locklib).
func (s Summary) Verdict() error {
	if !s.Counters.Unsafe() {
		return nil
	}
	return fmt.Errorf("%w: %s (%s lock)", ErrUnsafe, s.unsafeFigures(), s.Lock)
}

// unsafeFigures says what made a run unsafe, for Verdict and the text verdict alike.
func (s Summary) unsafeFigures() string {
	more := ""
	if s.TokenRegressions > 0 {
		more = fmt.Sprintf(", %d fencing tokens after a promotion not above the last before", s.TokenRegressions)
	}
	if s.LeaseViolations > 0 {
		more += fmt.Sprintf(", %d leases Redis let overlap (a writer with another holder, or more permits than the semaphore has)", s.LeaseViolations)
	}
	return fmt.Sprintf("%d critical sections interleaved with another on the same resource, %d writes of expired holders accepted%s",
		s.Overlaps, s.StaleAccepted, more)
}

// WriteJSON writes s as one JSON object.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText writes s as a table with one row per scenario and a verdict.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "lockscope demo: scenario %s, %d workers, %d resources, ttl %s, %s on %s\n",
		s.Scenario, s.Workers, s.Resources, present.Duration(time.Duration(s.TTLMs)*time.Millisecond),
		present.Duration(time.Duration(s.DurationS*float64(time.Second))), s.Server)
	fmt.Fprintf(&b, "lock: %s, protection: %s\n\n", s.Lock, s.Protection)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsections\thand-offs/s\twait p50\twait p99\texpired after crash\tno ttl\tstale rejected\tstale accepted\toverlaps")
	row := func(name string, k Counters, handoffs, p50, p99 float64) {
		if k.Sections == 0 {
			p50, p99 = -1, -1
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", name, k.Sections, handoffs,
			fmtMs(p50), fmtMs(p99), k.ExpiredAfterCrash, k.NoTTLLocks, k.StaleRejected, k.StaleAccepted, k.Overlaps)
	}
	for _, p := range s.Phases {
		row(string(p.Scenario), p.Counters, p.HandoffsPerS, p.WaitP50Ms, p.WaitP99Ms)
	}
	if len(s.Phases) > 1 {
		row("total", s.Counters, s.HandoffsPerS, s.WaitP50Ms, s.WaitP99Ms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nfaults: %d crashes, %d pauses, %d failovers; %d sections given up after losing the lock; %d obtain errors\n",
		s.Crashes, s.Pauses, s.Failovers, s.LostSections, s.ObtainErrors)
	switch s.Scenario {
	case FailoverReplica:
		s.writeFailovers(&b)
	case RWPool:
		fmt.Fprintf(&b, "leases: up to %d readers at once, up to %d of %d permits in use at once; %d leases lost (ran out: crashes, pauses); "+
			"%d acted after their lease went to another (refused: %d); %d leases Redis let overlap\n",
			s.MaxReaders, s.MaxPermits, s.Permits, s.LeasesLost, s.OverlappingHolders, s.StaleRejected, s.LeaseViolations)
	}
	for _, note := range s.missedScenarios() {
		fmt.Fprintf(&b, "note: %s\n", note)
	}
	switch {
	case s.Unsafe():
		fmt.Fprintf(&b, "verdict: UNSAFE: %s\n", s.unsafeFigures())
	case s.Scenario == RWPool:
		fmt.Fprintf(&b, "verdict: SAFE: no writer acted beside another holder of the document, never more than %d permits in use, "+
			"no stale operation accepted, no conflicting leases in Redis (%d sections)\n", s.Permits, s.Sections)
	default:
		fmt.Fprintf(&b, "verdict: SAFE: no two critical sections interleaved on a resource, no write of an expired holder accepted (%d sections)\n", s.Sections)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// missedScenarios say which scenarios a short run did not show: a phase of a mixed run that
// never began, or one whose fault never came (faults are drawn at random, a few TTLs apart).
func (s Summary) missedScenarios() []string {
	var notes []string
	for _, p := range s.Phases {
		faults := map[Scenario]int64{Crash: p.Crashes, Pause: p.Pauses, Failover: p.Failovers, FailoverReplica: p.Promotions,
			RWPool: min(p.Crashes, p.Pauses)}
		n, hasFault := faults[p.Scenario]
		switch {
		case p.DurationS == 0:
			notes = append(notes, fmt.Sprintf("the run ended before the %s scenario began: run longer (--duration) to see it", p.Scenario))
		case hasFault && n == 0:
			notes = append(notes, fmt.Sprintf("the %s scenario ran %s without its fault (they come at random, a few TTLs apart): a longer run shows one",
				p.Scenario, present.Duration(time.Duration(p.DurationS*float64(time.Second)))))
		}
	}
	return notes
}

// fmtMs shows milliseconds as present.Duration does (the TUI's demo pane too); a negative
// value (no sample) as present.Unknown.
func fmtMs(v float64) string {
	if v < 0 {
		return present.Unknown
	}
	return present.Duration(time.Duration(v * float64(time.Millisecond)))
}
