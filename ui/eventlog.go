package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
)

// eventLogSize is how many entries the event log keeps.
const eventLogSize = 500

// The event log's own kinds of line, besides locklib's event types.
const (
	kindAction    = "action"     // an operator's release or extend, and its result
	kindWarning   = "warning"    // a scanner warning
	kindFailover  = "failover"   // the sentinels switched the master: "master A → B"
	kindFenceJump = "fence-jump" // a lock's fence token jumped (fencejump.go)
)

// logEntry is one line of the event log: a locklib lifecycle event, an operator action, a
// scanner warning, a failover or a fence-token jump.
type logEntry struct {
	at   time.Time
	kind string // locklib.EventType, kindAction or kindWarning
	key  string
	text string
}

// eventLog is the live log pane: a ring of the newest entries, drawn newest last.
type eventLog struct {
	open    bool
	entries []logEntry // oldest first, at most eventLogSize
	seen    int        // events received in total
}

func (e *eventLog) add(en logEntry) {
	e.seen++
	if len(e.entries) == eventLogSize {
		copy(e.entries, e.entries[1:])
		e.entries = e.entries[:eventLogSize-1]
	}
	e.entries = append(e.entries, en)
}

// entryFromEvent describes a locklib event in one line.
func entryFromEvent(ev protocol.Event) logEntry {
	var parts []string
	if ev.Node != "" {
		parts = append(parts, "node="+ev.Node)
	}
	if ev.Trace != "" {
		parts = append(parts, "trace="+ev.Trace)
	}
	if ev.Token != 0 {
		parts = append(parts, "fence="+strconv.FormatInt(ev.Token, 10))
	}
	if ev.TTLMs != 0 {
		parts = append(parts, "ttl="+present.Duration(time.Duration(ev.TTLMs)*time.Millisecond))
	}
	if ev.WaitMs != 0 {
		parts = append(parts, "waited="+present.Duration(time.Duration(ev.WaitMs)*time.Millisecond))
	}
	if ev.HoldMs != 0 {
		parts = append(parts, "held="+present.Duration(time.Duration(ev.HoldMs)*time.Millisecond))
	}
	if ev.Waiters != 0 {
		parts = append(parts, "waiters="+strconv.FormatInt(ev.Waiters, 10))
	}
	if ev.Reason != "" {
		parts = append(parts, "reason="+ev.Reason)
	}
	return logEntry{at: time.UnixMilli(ev.AtMs), kind: ev.Type, key: ev.Key, text: strings.Join(parts, " ")}
}

// view renders the newest entries that fit in width x height (content only, no border).
func (e eventLog) view(width, height int, st styles) string {
	if height <= 0 {
		return ""
	}
	if len(e.entries) == 0 {
		return fitBlock(st.dim.Render("no events yet (locklib publishes on "+protocol.EventsChannel+")"), width, height)
	}
	start := max(len(e.entries)-height, 0)
	lines := make([]string, 0, height)
	for _, en := range e.entries[start:] {
		kind := st.eventStyle(en.kind).Render(cell(en.kind, 12))
		line := st.dim.Render(en.at.Format("15:04:05.000")) + " " + kind
		// Keys and event fields come from Redis: escaped here, where they are drawn.
		if en.key != "" {
			line += " " + present.SafeText(en.key, 0)
		}
		switch {
		case en.kind == kindAction || en.kind == kindWarning || en.kind == kindFailover || en.kind == kindFenceJump || en.kind == kindDemo: // not dimmed: they matter
			line += " " + present.SafeText(en.text, 0)
		case en.text != "":
			line += " " + st.dim.Render(present.SafeText(en.text, 0))
		}
		lines = append(lines, line)
	}
	return fitBlock(strings.Join(lines, "\n"), width, height)
}
