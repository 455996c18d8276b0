package ui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// Shared primitives (read-write locks, semaphores: scanner.Shared) in the console: a compact
// mark in the table's HOLDER cell, their holders and waiters in the detail view with a cursor
// on one holder, and the per-holder force-release (actions.ReleaseHolder). A multi-key lock's
// other keys ("taken together with") are found in the census when its detail view opens,
// never for the table.

// selectedHolder is the live holder under the detail view's cursor (ok false when l has none).
func (d detailPane) selectedHolder(l *scanner.Lock) (scanner.SharedHolder, bool) {
	if l == nil || l.Shared == nil {
		return scanner.SharedHolder{}, false
	}
	live := l.Shared.Live()
	if len(live) == 0 {
		return scanner.SharedHolder{}, false
	}
	return live[min(max(d.holder, 0), len(live)-1)], true
}

// moveHolder moves the detail view's holder cursor by n, within l's live holders.
func (d *detailPane) moveHolder(l *scanner.Lock, n int) {
	if l == nil || l.Shared == nil {
		return
	}
	live := len(l.Shared.Live())
	d.holder = min(max(d.holder+n, 0), max(live-1, 0))
}

// sharedLines are the detail view's lines for a shared primitive, worded as `show` words them
// (present): its counts, each live holder (the one under the cursor marked ▸: d releases it)
// with its mode, levels, own TTL counting down, node, trace and age, and the queued waiters
// with the mode each waits for.
func (d detailPane) sharedLines(l *scanner.Lock, width int, now, serverNow time.Time, st styles) []string {
	s := l.Shared
	var lines []string
	// add wraps a line under its label, as the detail view's fields do.
	add := func(name, styled string) {
		for i, part := range wrapCells(styled, max(width-detailLabelWidth, 8)) {
			if i > 0 {
				name = ""
			}
			lines = append(lines, st.label.Render(cell(name, detailLabelWidth))+part)
		}
	}
	add("kind", string(present.SharedSummary(s)))
	live := s.Live()
	switch {
	case s.HoldersUnknown:
		add("holders", st.dim.Render("Redisson keeps no record of who holds its permits: none can be released on a holder's behalf"))
	case len(live) == 0:
		add("holders", st.dim.Render("none"))
	default:
		add("holders", st.dim.Render("tab/shift+tab select · d releases the selected holder"))
		cur := min(max(d.holder, 0), len(live)-1)
		for i, h := range live {
			line := string(present.SharedHolderLine(l, h, now, serverNow))
			if i == cur {
				lines = append(lines, st.selected.Render(fitLine("▸ "+line, max(width, 8))))
			} else {
				lines = append(lines, fitLine("  "+line, max(width, 8)))
			}
		}
	}
	for i, w := range s.Waiters {
		name := ""
		if i == 0 {
			name = "waiters"
		}
		add(name, fmt.Sprintf("%d. %s", i+1, present.SharedWaiterLine(w)))
	}
	return lines
}

// mayBeMulti reports whether l could be one key of a multi-key lock: a lockscope string
// holding a plain value (ObtainMulti writes the same value, without a count, at every key).
func mayBeMulti(l *scanner.Lock) bool {
	return l != nil && l.Format == scanner.FormatLockscope && l.Type == "string" && l.Shared == nil &&
		l.Reentry == 0 && !l.Truncated
}

// together is what the detail view knows of the keys taken together with one lock: found in
// the census (seq tags the search in flight) for id holding value.
type together struct {
	seq   uint64
	id    string
	value string
	keys  []string // the other keys holding value, sorted; nil while searching or when none
}

// togetherMsg is the answer of togetherCmd.
type togetherMsg together

// togetherCmd finds the other keys of snap holding value (the keys taken together with key by
// ObtainMulti), off the update loop: a million-lock census pays for it only when a detail view
// asks.
func togetherCmd(snap []*lockRow, seq uint64, id, key, value string) tea.Cmd {
	return func() tea.Msg {
		var keys []string
		for _, r := range snap {
			if r.value == value && r.key != key {
				keys = append(keys, r.key)
			}
		}
		slices.Sort(keys)
		return togetherMsg{seq: seq, id: id, value: value, keys: keys}
	}
}

// onTogether keeps the answer of the latest search only.
func (m *Model) onTogether(msg togetherMsg) {
	if msg.seq != m.detail.together.seq {
		return
	}
	m.detail.together = together(msg)
}

// togetherText is the detail view's "taken together with" line of lock id, l, as read (the
// view escapes it; ok false when no other key is known to hold its value).
func (d detailPane) togetherText(l *scanner.Lock, id string) (string, bool) {
	t := d.together
	if t.id != id || t.value != l.Value || len(t.keys) == 0 { // not searched, searching, or none
		return "", false
	}
	return "taken together with " + strings.Join(t.keys, ", ") + " · D releases all " + strconv.Itoa(len(t.keys)+1) + " at once", true
}

// holderCmd force-releases (ActionReleaseHolder) or re-times to ttl (ActionExtendHolder)
// holder h of seen, the record the operator saw, only if it still holds exactly what the
// census read of it (actions.SeenFor).
func holderCmd(ctx context.Context, admin *actions.Admin, id uint64, seen *scanner.Lock, h scanner.SharedHolder, action actions.Action, ttl time.Duration, reason string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		done := actionDoneMsg{id: id, action: action, key: seen.Key, holder: h.ID, seen: seen}
		expect, err := actions.SeenFor(seen, h)
		if err != nil {
			attempt := actions.Result{Action: action, Key: seen.Key, Holder: h.ID, TTL: ttl, Outcome: actions.Failed}
			done.result, done.err = actions.Result{Action: action, Holder: h.ID, AuditErr: admin.RecordStopped(ctx, attempt, err, reason)}, err
			return done
		}
		if action == actions.ActionExtendHolder {
			done.result, done.err = admin.ExtendHolder(ctx, seen.Key, h.ID, expect, ttl, reason)
		} else {
			done.result, done.err = admin.ReleaseHolder(ctx, seen.Key, h.ID, expect, reason)
		}
		return done
	}
}

// releaseTogetherCmd deletes seen.Key and keys, all holding seen's value, all or nothing.
func releaseTogetherCmd(ctx context.Context, admin *actions.Admin, id uint64, seen *scanner.Lock, keys []string, reason string) tea.Cmd {
	all := append([]string{seen.Key}, keys...)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		res, err := admin.ReleaseTogether(ctx, all, seen.Value, reason)
		return actionDoneMsg{id: id, action: actions.ActionReleaseTogether, key: seen.Key, seen: seen, result: res, err: err}
	}
}
