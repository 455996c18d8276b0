package ui

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// connState is the health of the connection as the scanner's stream reports it.
type connState int

const (
	connConnecting   connState = iota // no pass delivered yet
	connLive                          // the last step succeeded
	connReconnecting                  // a step failed and is retried; the table is kept
)

// statusBar is the top line (target, connection, counts, last scan, read-only badge) and the
// banner under it while the connection is down.
type statusBar struct {
	target connect.Target
	label  string // extra words about the target (the demo: which server)
	// A Sentinel target's monitored master: its name, and its address now ("" until known).
	masterName, master string
	readOnly           bool

	conn     connState
	connErr  string // the last connection error, while reconnecting
	attempt  int
	retryIn  time.Duration
	scanAt   time.Time // when the last complete pass started
	scanDur  time.Duration
	missing  []string // servers the last pass could not read
	warnings []string // distinct warnings so far, newest last
	// following is how the scanner keeps the census fresh between passes (zero until it
	// says).
	following scanner.Following
	// clocks are the servers' clocks and last answers (the scanner's heartbeats), replaced,
	// never changed in place: a command may hold the map.
	clocks scanner.Clocks
}

func newStatusBar(t connect.Target, label string, readOnly bool) statusBar {
	return statusBar{target: t, label: label, readOnly: readOnly, masterName: t.SentinelMaster()}
}

// lateAfter is when a server counts as no longer answering: three heartbeats
// (scanner.HeartbeatEvery, each waiting that long at most) without an answer. What was read
// from it is then older than the countdown pretends.
const lateAfter = 3 * scanner.HeartbeatEvery

// heard records server addr's heartbeat; a zero clock forgets the server (it is no longer
// one of the target's).
func (s *statusBar) heard(addr string, c scanner.ServerClock) {
	clocks := make(scanner.Clocks, len(s.clocks)+1)
	for have, hc := range s.clocks {
		if have != addr {
			clocks[have] = hc
		}
	}
	if !c.Answered.IsZero() {
		clocks[addr] = c
	}
	s.clocks = clocks
}

// late are the servers whose last heartbeat is older than lateAfter at now (nil: none), and
// the age of the oldest answer among them: how old the data may be.
func (s statusBar) late(now time.Time) (map[string]bool, time.Duration) {
	var late map[string]bool
	var oldest time.Duration
	for addr, c := range s.clocks {
		if age := now.Sub(c.Answered); age > lateAfter {
			if late == nil {
				late = map[string]bool{}
			}
			late[addr] = true
			oldest = max(oldest, age)
		}
	}
	return late, oldest
}

// lateRow says a row's data comes from servers that stopped answering: its server, or for a
// Redlock record so many of its instances that a quorum no longer answers.
func lateRow(l *scanner.Lock, late map[string]bool) bool {
	if len(late) == 0 {
		return false
	}
	if l.Quorum == nil {
		return late[l.Addr]
	}
	answering := 0
	for _, in := range l.Quorum.Instances {
		if !late[in.Addr] {
			answering++
		}
	}
	return answering < l.Quorum.Needed
}

// maxWarnings bounds the warnings kept for display.
const maxWarnings = 8

// warn records a scanner warning and reports whether it is new.
func (s *statusBar) warn(w string) bool {
	for _, have := range s.warnings {
		if have == w {
			return false
		}
	}
	s.warnings = append(s.warnings, w)
	if len(s.warnings) > maxWarnings {
		s.warnings = s.warnings[1:]
	}
	return true
}

// targetText is "standalone 10.0.0.1:6379", "cluster 10.0.0.1:7000 +2", "redlock×3 a b c",
// "independent×2 a b" (N servers, each with locks of its own), "sentinel NAME → 10.0.0.1:6379"
// (the master the sentinels name now; "…" until they said).
func (s statusBar) targetText() string {
	addrs := s.target.Addrs
	var where string
	switch {
	case s.target.Mode == connect.Sentinel:
		where = s.masterName + " → " + cmp.Or(s.master, "…")
	case len(addrs) == 0:
		where = "?"
	case s.target.Mode == connect.Redlock || s.target.Mode == connect.Independent:
		where = strings.Join(addrs, " ")
	case len(addrs) > 1:
		where = addrs[0] + " +" + strconv.Itoa(len(addrs)-1)
	default:
		where = addrs[0]
	}
	mode := s.target.Mode.String()
	if s.target.Mode == connect.Redlock || s.target.Mode == connect.Independent {
		mode += "×" + strconv.Itoa(len(addrs))
	}
	text := mode + " " + where
	if s.label != "" {
		text += " (" + s.label + ")"
	}
	return text
}

type segment struct {
	text     string // styled
	priority int    // lower is dropped first
}

// view renders the status line within width; now ages the last complete pass and the servers'
// last answers.
func (s statusBar) view(width int, now time.Time, counts lockCounts, shown int, filtered bool, st styles) string {
	var conn segment
	_, stale := s.late(now)
	switch {
	case stale > 0:
		text := "◌ stale " + staleText(stale)
		if s.conn == connReconnecting {
			text = "✖ reconnecting… stale " + staleText(stale)
		}
		conn = segment{st.connBad.Render(text), 9}
	case s.conn == connLive:
		conn = segment{st.connOK.Render("● live"), 9}
		if len(s.missing) > 0 {
			conn = segment{st.connBad.Render("◐ partial"), 9}
		}
	case s.conn == connReconnecting:
		conn = segment{st.connBad.Render("✖ reconnecting…"), 9}
	default:
		conn = segment{st.warning.Render("◌ connecting…"), 9}
	}
	count := counts.text(shown, filtered)
	kv := func(k, v string) string { return st.statusKey.Render(k) + st.statusVal.Render(v) }
	target := segment{st.statusVal.Render(present.SafeText(s.targetText(), 0)), 4}
	if s.target.Mode == connect.Sentinel {
		target.priority = 8 // the master followed: what a failover changes, kept before the counts
	}
	segs := []segment{
		{st.title.Render("lockscope"), 2},
		target,
		conn,
		{st.statusVal.Render(count), 8},
		{kv("soon ", strconv.Itoa(counts.soon)), 6},
		{kv("∞ ", strconv.Itoa(counts.noExpiry)), 7},
		{kv("stuck ", strconv.Itoa(counts.stuck)), 7},
	}
	switch {
	case s.following.Summary() != "":
		segs = append(segs, s.followingSegments(now, kv, st)...)
	case !s.scanAt.IsZero():
		segs = append(segs, segment{kv("scan ", s.scanAt.Format("15:04:05")+" "+present.Duration(s.scanDur)), 3})
	}
	if len(s.warnings) > 0 {
		segs = append(segs, segment{st.warning.Render("⚠ " + strconv.Itoa(len(s.warnings))), 5})
	}
	if s.readOnly {
		segs = append(segs, segment{st.badge.Render(" READ-ONLY "), 10})
	}
	return fitLine(joinSegments(segs, width, st.dim.Render(" │ ")), width)
}

// staleText is how old the data of a server that stopped answering is: whole seconds ("4s"),
// counting up.
func staleText(d time.Duration) string {
	if d < time.Minute {
		return strconv.Itoa(int(d/time.Second)) + "s"
	}
	return present.Duration(d)
}

// joinSegments drops the lowest-priority segments until the rest fit in width.
func joinSegments(segs []segment, width int, sep string) string {
	keep := make([]bool, len(segs))
	for i := range keep {
		keep[i] = true
	}
	for {
		var parts []string
		for i, sg := range segs {
			if keep[i] {
				parts = append(parts, sg.text)
			}
		}
		line := strings.Join(parts, sep)
		if lipgloss.Width(line) <= width || len(parts) <= 1 {
			return line
		}
		drop, lowest := -1, 1<<30
		for i, sg := range segs {
			if keep[i] && sg.priority < lowest {
				drop, lowest = i, sg.priority
			}
		}
		keep[drop] = false
	}
}

// banner is the line under the status bar while the connection is down or the census is
// partial; "" when all is well.
func (s statusBar) banner(width int, st styles) string {
	var text string
	switch {
	case s.conn == connReconnecting:
		// What the operator must know first; the error, long, is cut at the screen's edge.
		text = "reconnecting… the table shows the last census"
		if s.attempt > 0 {
			text += " · attempt " + strconv.Itoa(s.attempt)
			if s.retryIn > 0 {
				text += ", next in " + present.Duration(s.retryIn)
			}
		}
		text += " · " + s.connErr
	case len(s.missing) > 0:
		text = "partial census: cannot read " + strings.Join(s.missing, ", ")
	default:
		return ""
	}
	return st.banner.Render(cell(" "+text, width))
}

// followingSegments say how fresh the census is: how the servers are followed (in the
// warning colour when some server only has locklib's events), the age of the last complete
// pass (every record was read since, and the changes heard of since were re-read as they
// came), and, dropped first on a narrow screen, how far the background re-scan is and its
// budget.
func (s statusBar) followingSegments(now time.Time, kv func(k, v string) string, st styles) []segment {
	f := s.following
	how := kv("following ", f.Summary())
	if f.Degraded() {
		how = st.warning.Render("following " + f.Summary())
	}
	segs := []segment{{how, 5}}
	if !s.scanAt.IsZero() {
		segs = append(segs, segment{kv("oldest ", present.Duration(now.Sub(s.scanAt).Truncate(time.Second))), 5})
	}
	budget := "unpaced"
	if f.Budget < 1 {
		budget = present.Percent(f.Budget) + " budget"
	}
	if f.Rescan > 0 {
		budget = "re-scan " + present.Percent(f.Rescan) + " at " + budget
	}
	return append(segs, segment{st.statusVal.Render(budget), 3})
}
