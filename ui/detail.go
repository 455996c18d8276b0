package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// detailPane shows everything known about the selected lock: decoded fields, the raw value,
// the cluster master that holds it, or for Redlock each instance's value and TTL and the
// quorum.
type detailPane struct {
	open bool
}

// view renders the pane's content (without border) for lock l in width x height; cluster
// says the target is a Redis Cluster (the master holding the key is worth a line). The TTL
// counts down on the local clock now, the age on the server's (clocks), as in the table.
func (detailPane) view(l *scanner.Lock, width, height int, now time.Time, clocks scanner.Clocks, stuckAfter time.Duration, waiters map[string]int, cluster bool, st styles) string {
	if l == nil {
		return st.dim.Render("no lock selected")
	}
	const labelW = 10
	var lines []string
	// Fields are text as read from Redis, escaped here; styled lines of our own go through addStyled.
	addStyled := func(name, styled string) {
		lines = append(lines, st.label.Render(cell(name, labelW))+styled)
	}
	add := func(name, text string) { addStyled(name, present.SafeText(text, 0)) }
	lines = append(lines, st.paneTitle.Render(present.SafeText(l.Key, 0)))
	format := string(l.Format)
	if l.Type != "" {
		format += " (" + l.Type + ")"
	}
	add("format", format)
	add("holder", present.OrUnknown(l.Node))
	add("trace", present.OrUnknown(l.Trace))
	if !l.AcquiredAt.IsZero() {
		serverNow := clocks.Now(l, now)
		acq := present.Acquired(l, serverNow)
		if present.Stuck(l, serverNow, stuckAfter) {
			acq += " " + st.stuck.Render(present.FlagStuck.Label())
		}
		addStyled("acquired", acq)
	} else {
		add("acquired", present.Unknown)
	}
	switch {
	case l.NoExpiry:
		addStyled("ttl", st.noExpiry.Render(present.NeverExpires))
	default:
		add("ttl", fmt.Sprintf("%s left (read %s at %s)", present.Duration(l.RemainingAt(now)),
			present.Duration(l.TTL), present.Time(l.FetchedAt)))
	}
	if l.Reentry > 0 {
		add("re-entry", strconv.Itoa(l.Reentry))
	}
	if l.HasFence {
		add("fence", strconv.FormatInt(l.Fence, 10))
	}
	if n, ok := waitersOf(l, waiters); ok {
		add("waiters", strconv.Itoa(n))
	}
	if cluster && l.Addr != "" {
		add("master", l.Addr)
	}
	if token := l.Token(); token != "" {
		add("token", token)
	}
	if meta := l.Meta(); meta != "" {
		add("meta", meta)
	}
	for i, o := range l.Owners {
		name := ""
		if i == 0 {
			name = "owners"
		}
		add(name, present.Owner(o))
	}
	value := present.Value(l, 0)
	valueW := max(width-labelW, 8)
	for i, part := range wrapCells(value, valueW, 4) {
		name := ""
		if i == 0 {
			name = "value"
		}
		addStyled(name, part) // escaped by present.Value
	}
	if q := l.Quorum; q != nil {
		lines = append(lines, st.label.Render("instances"))
		for _, in := range q.Instances {
			lines = append(lines, "  "+instanceLine(l, in, st))
		}
	}
	if q := l.Quorum; q != nil {
		verdict := st.connOK.Render(present.QuorumVerdict(q))
		if !q.Reached {
			verdict = st.connBad.Render(present.QuorumVerdict(q))
		}
		addStyled("quorum", present.QuorumAgreement(q)+": "+verdict)
	}
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

// instanceLine is one server's state of the key; it escapes the address and value it shows.
func instanceLine(l *scanner.Lock, in scanner.Instance, st styles) string {
	var state, ttl string
	switch {
	case in.Missing:
		state = st.connBad.Render("? unreadable")
	case !in.Present:
		state = st.dim.Render("- absent")
	case in.Value == l.Value:
		state = st.connOK.Render("✓ agrees")
	default:
		state = st.warning.Render("≠ other holder")
	}
	if in.Present {
		ttl = present.InstanceTTL(in)
	}
	return fmt.Sprintf("%s  %s %s  %s", present.SafeText(in.Addr, 0), padRight(state, 14), cellRight(ttl, 6), present.SafeText(in.Value, 40))
}

// wrapCells cuts s into lines of width cells, at most maxLines (the last one marked when cut).
func wrapCells(s string, width, maxLines int) []string {
	if s == "" {
		return []string{present.Unknown}
	}
	wrapped := strings.Split(ansi.Hardwrap(s, width, true), "\n")
	if len(wrapped) > maxLines {
		wrapped = wrapped[:maxLines]
		wrapped[maxLines-1] = ansi.Truncate(wrapped[maxLines-1], width-1, "") + "…"
	}
	return wrapped
}
