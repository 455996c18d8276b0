package exporter

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/scanner"
)

// ttlBuckets are the upper bounds of lockscope_lock_ttl_seconds, in seconds.
var ttlBuckets = [...]float64{1, 5, 15, 30, 60, 300, 900, 3600}

// ttlBounds are ttlBuckets as durations: a scrape compares integers.
var ttlBounds = func() (d [len(ttlBuckets)]time.Duration) {
	for i, s := range ttlBuckets {
		d[i] = time.Duration(s * float64(time.Second))
	}
	return d
}()

// groupStats are one group's aggregates at a scrape.
type groupStats struct {
	locks, noExpiry, stuck, waiters uint64
	noExpiryMaybeSemaphore          uint64 // of noExpiry
	noQuorum                        uint64
	oldest                          time.Duration
	hasOldest                       bool
	ttl                             [len(ttlBuckets) + 1]uint64 // per bucket, not cumulative; the last is +Inf
	ttlSum                          float64
}

// snapshot is what a scrape writes, taken under the lock and written without it.
type snapshot struct {
	groups    []string
	stats     []groupStats
	formats   []scanner.Format
	byFormat  []uint64     // [group*len(formats)+format]
	servers   []serverSnap // the target's servers now
	errors    []serverSnap // every server a failure was counted against, and those
	folded    int
	passes    uint64
	duration  time.Duration
	partial   bool
	complete  time.Time
	quorum    bool
	mode      connect.Mode
	version   string
	collected time.Duration // how long the aggregation took
}

type serverSnap struct {
	addr   string
	up     bool
	errors uint64
}

func byAddr(a, b serverSnap) int { return strings.Compare(a.addr, b.addr) }

// take aggregates the census at now: one walk of the entries.
func (e *Exporter) take(now time.Time) snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.census
	s := snapshot{groups: slices.Clone(c.groups), formats: slices.Clone(c.formats), folded: c.folder.Folded(),
		passes: e.passes, duration: e.lastDuration, partial: e.partial, complete: e.lastComplete,
		mode: e.mode, version: e.opts.Version}
	s.stats = make([]groupStats, len(s.groups))
	s.byFormat = make([]uint64, len(s.groups)*len(s.formats))
	nowNs, stuckNs := now.UnixNano(), int64(e.opts.StuckAfter)
	for i := range c.entries {
		en := &c.entries[i]
		g := &s.stats[en.group]
		g.locks++
		s.byFormat[int(en.group)*len(s.formats)+int(en.format)]++
		if en.flags&entryNotALock != 0 {
			continue // no lock: `ls` counts it apart, and present.NeverFrees never flags it
		}
		g.waiters += uint64(max(en.waiters, 0))
		if en.flags&entryNoQuorum != 0 {
			g.noQuorum++
		}
		switch {
		case en.flags&entryNoExpiry != 0:
			g.noExpiry++
			if en.flags&entryMaybeSemaphore != 0 {
				g.noExpiryMaybeSemaphore++
			}
		case en.flags&entryUntimed != 0:
		default:
			left := max(time.Duration(en.expires-nowNs), 0)
			g.ttl[bucketOf(left)]++
			g.ttlSum += left.Seconds()
		}
		// A stamp more than skewTolerance ahead of now is clock skew: its age is unknown.
		if age := nowNs - en.acquired; en.flags&entryAcquired != 0 && age > -int64(skewTolerance) {
			age = max(age, 0)
			if age > stuckNs {
				g.stuck++
			}
			if !g.hasOldest || time.Duration(age) > g.oldest {
				g.oldest, g.hasOldest = time.Duration(age), true
			}
		}
	}
	up := 0
	for addr, answered := range e.servers {
		alive := !answered.IsZero() && now.Sub(answered) <= silentAfter
		if alive {
			up++
		}
		s.servers = append(s.servers, serverSnap{addr: addr, up: alive})
		if _, counted := e.errors[addr]; !counted {
			s.errors = append(s.errors, serverSnap{addr: addr})
		}
	}
	for addr, n := range e.errors {
		s.errors = append(s.errors, serverSnap{addr: addr, errors: n})
	}
	slices.SortFunc(s.servers, byAddr)
	slices.SortFunc(s.errors, byAddr)
	s.quorum = up >= len(e.servers)/2+1
	s.collected = e.opts.Now().Sub(now)
	return s
}

// skewTolerance is how far ahead of the server's clock a stamp may be and still count as
// just taken (present.Skew's tolerance: a clock read over the network is only that exact).
const skewTolerance = time.Second

// bucketOf is the index of the first bucket whose bound holds d.
func bucketOf(d time.Duration) int {
	for i, bound := range ttlBounds {
		if d <= bound {
			return i
		}
	}
	return len(ttlBounds)
}

// WriteMetrics writes every metric in the text exposition format. It reads no server: the
// census is the one the stream left.
func (e *Exporter) WriteMetrics(w io.Writer) error {
	s := e.take(e.opts.Now())
	out := bufio.NewWriterSize(w, 32<<10)
	x := &expfmt{w: out}
	s.writeLocks(x)
	s.writeCensus(x)
	return out.Flush()
}

// groupOrder is the groups' indices in name order.
func (s *snapshot) groupOrder() []int {
	order := make([]int, 0, len(s.groups))
	for g := range s.groups {
		if s.stats[g].locks > 0 { // a group whose locks are all gone has no series
			order = append(order, g)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(s.groups[a], s.groups[b]) })
	return order
}

// groupGauge is a gauge with a sample per group: its value, and whether the group has one.
type groupGauge struct {
	name, help string
	value      func(*groupStats) (float64, bool)
}

func (s *snapshot) writeLocks(x *expfmt) {
	groups := s.groupOrder()
	formats := make([]int, len(s.formats))
	for f := range formats {
		formats[f] = f
	}
	slices.SortFunc(formats, func(a, b int) int { return strings.Compare(string(s.formats[a]), string(s.formats[b])) })

	x.family("lockscope_locks", "gauge", "Locks in the census, by key group and value format.")
	for _, g := range groups {
		for _, f := range formats {
			if n := s.byFormat[g*len(s.formats)+f]; n > 0 {
				x.sample("lockscope_locks", float64(n), label{"group", s.groups[g]}, label{"format", string(s.formats[f])})
			}
		}
	}
	perGroup := []groupGauge{
		{"lockscope_locks_no_expiry", "Locks without a TTL: they never free themselves.",
			func(g *groupStats) (float64, bool) { return float64(g.noExpiry), true }},
		{"lockscope_locks_no_expiry_maybe_semaphore", "Of lockscope_locks_no_expiry, those whose value is also a Redisson RSemaphore's count (a small number, no TTL): Redis cannot tell them from a lock whose EXPIRE never came.",
			// Only where there are locks without expiry (the series' count stays per group as it
			// was): the difference an alert takes exists wherever it can be above 0.
			func(g *groupStats) (float64, bool) { return float64(g.noExpiryMaybeSemaphore), g.noExpiry > 0 }},
		{"lockscope_locks_stuck", "Locks held longer than --stuck-after: by their acquisition stamp (locklib), else by how long the exporter has seen the same holder.",
			func(g *groupStats) (float64, bool) { return float64(g.stuck), true }},
		{"lockscope_lock_oldest_age_seconds", "Age of the group's oldest lock: since its acquisition stamp (locklib), else since the exporter first saw its holder (a lower bound).",
			func(g *groupStats) (float64, bool) { return g.oldest.Seconds(), g.hasOldest }},
		{"lockscope_lock_waiters", "Waiters queued for the group's locks (where the queue could be read).",
			func(g *groupStats) (float64, bool) { return float64(g.waiters), true }},
	}
	if s.mode == connect.Redlock {
		perGroup = append(perGroup, groupGauge{"lockscope_redlock_locks_without_quorum", "Redlock: locks whose value fewer than N/2+1 instances hold (not validly held).",
			func(g *groupStats) (float64, bool) { return float64(g.noQuorum), true }})
	}
	for _, m := range perGroup {
		x.family(m.name, "gauge", m.help)
		for _, g := range groups {
			if v, ok := m.value(&s.stats[g]); ok {
				x.sample(m.name, v, label{"group", s.groups[g]})
			}
		}
	}
	x.family("lockscope_lock_ttl_seconds", "histogram", "Remaining TTL of the locks that have one, at the scrape.")
	for _, g := range groups {
		st := &s.stats[g]
		group := label{"group", s.groups[g]}
		var cum, count uint64
		for _, n := range st.ttl {
			count += n
		}
		for i, bound := range ttlBuckets {
			cum += st.ttl[i]
			x.sample("lockscope_lock_ttl_seconds_bucket", float64(cum), group, label{"le", string(appendValue(nil, bound))})
		}
		x.sample("lockscope_lock_ttl_seconds_bucket", float64(count), group, label{"le", "+Inf"})
		x.sample("lockscope_lock_ttl_seconds_sum", st.ttlSum, group)
		x.sample("lockscope_lock_ttl_seconds_count", float64(count), group)
	}
}

func (s *snapshot) writeCensus(x *expfmt) {
	x.family("lockscope_census_duration_seconds", "gauge", "Wall time of the last census pass that ended (all servers together).")
	x.sample("lockscope_census_duration_seconds", s.duration.Seconds())
	x.family("lockscope_census_errors_total", "counter", "Failed census steps by server: retried SCAN calls or reads, failed passes, servers a pass missed.")
	for _, srv := range s.errors {
		x.sample("lockscope_census_errors_total", float64(srv.errors), label{"server", srv.addr})
	}
	x.family("lockscope_census_last_success_timestamp_seconds", "gauge", "Unix time the last complete census pass (every server read) ended; 0 before the first.")
	var last float64
	if !s.complete.IsZero() {
		last = float64(s.complete.UnixMilli()) / 1e3
	}
	x.sample("lockscope_census_last_success_timestamp_seconds", last)
	x.family("lockscope_census_passes_total", "counter", "Census passes that ended, complete or partial.")
	x.sample("lockscope_census_passes_total", float64(s.passes))
	x.family("lockscope_census_partial", "gauge", "1 when the last census pass missed a server.")
	x.sample("lockscope_census_partial", boolValue(s.partial))
	x.family("lockscope_server_up", "gauge", "1 when the server answered one of its last three heartbeats (one a second).")
	role := label{"role", role(s.mode)}
	for _, srv := range s.servers {
		x.sample("lockscope_server_up", boolValue(srv.up), label{"server", srv.addr}, role)
	}
	if s.mode == connect.Redlock {
		x.family("lockscope_redlock_quorum", "gauge", "1 when a quorum (N/2+1) of the Redlock instances is up.")
		x.sample("lockscope_redlock_quorum", boolValue(s.quorum))
	}
	x.family("lockscope_exporter_groups_folded", "gauge", "Distinct key groups folded into group=\"_other\" since the start (--max-groups reached); counts up to "+
		strconv.Itoa(keygroup.MaxFoldedCounted)+".")
	x.sample("lockscope_exporter_groups_folded", float64(s.folded))
	x.family("lockscope_exporter_scrape_collect_seconds", "gauge", "Time this scrape took to aggregate the census (no Redis call).")
	x.sample("lockscope_exporter_scrape_collect_seconds", s.collected.Seconds())
	x.family("lockscope_exporter_info", "gauge", "The exporter's version and the kind of target it watches.")
	x.sample("lockscope_exporter_info", 1, label{"version", s.version}, label{"target_kind", s.mode.String()})
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
