package ui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// Every piece of IO and every slow computation runs in one of these commands, never in Update.
// A command only reads the values it was given (copies or immutable records) and reports back
// with a message; it never touches the model.

// tickInterval is the steady beat of the client-side TTL countdown.
const tickInterval = 250 * time.Millisecond

// actionTimeout bounds one release or extend (per instance the Admin has its own bound).
const actionTimeout = 10 * time.Second

// auditLimit is how many audit records the audit view loads.
const auditLimit = 200

// waitForScan blocks on the scanner's stream for its next message; Update re-issues it after
// each one (the realtime pattern), so exactly one reader is waiting at any time.
func waitForScan(ch <-chan scanner.Update, session uint64) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return scanClosedMsg{}
		}
		return scanMsg{update: u, session: session}
	}
}

// waitForEvent blocks on the lifecycle-event stream for its next event.
func waitForEvent(ch <-chan protocol.Event, session uint64) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsClosedMsg{}
		}
		return eventMsg{event: ev, session: session}
	}
}

// waitForSwitch blocks on a Sentinel target's stream of master switches
// (connect.Target.FollowMaster) for the next one; Update re-issues it after each.
func waitForSwitch(ch <-chan connect.MasterSwitch, session uint64) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		sw, ok := <-ch
		if !ok {
			return masterClosedMsg{}
		}
		return masterSwitchMsg{sw: sw, session: session}
	}
}

// masterTimeout bounds asking the sentinels for the master.
const masterTimeout = 5 * time.Second

// masterCmd asks a Sentinel target's sentinels which master they follow now (nil for
// another target).
func masterCmd(ctx context.Context, t connect.Target, session uint64) tea.Cmd {
	if t.Mode != connect.Sentinel {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, masterTimeout)
		defer cancel()
		addr, err := t.Master(ctx)
		return masterMsg{addr: addr, err: err, session: session}
	}
}

func tick() tea.Cmd {
	return tea.Tick(tickInterval, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// buildViewCmd filters and sorts a snapshot of the census off the update loop.
// A build whose query is no longer the latest stops early; its message is dropped by its
// generation like any stale build's.
func buildViewCmd(snap []*lockRow, q viewQuery, gen uint64, latest *atomic.Uint64, vb viewBuild, selKey string) tea.Cmd {
	return func() tea.Msg {
		rank := newRanking[string](q, false, 0, vb)
		matched, counts := rankRows(snap, q, vb, outdated(gen, latest), rowIDs(vb.byServer), rank)
		snap = nil // passes may replace these rows while the keys are sorted: let them go
		idx := viewIndex{rows: rankedKeys(rank, matched), counts: counts}
		return viewBuiltMsg{gen: gen, index: idx, selKey: selKey, selIndex: indexOfKey(idx.rows, selKey)}
	}
}

// partialViewCmd finds the first and the last limit rows of a new order in one pass, for the
// table to show while the full build runs.
func partialViewCmd(snap []*lockRow, q viewQuery, gen uint64, latest *atomic.Uint64, vb viewBuild, limit int) tea.Cmd {
	return func() tea.Msg {
		return viewPartialMsg{gen: gen, index: buildPartialView(snap, q, vb, outdated(gen, latest), limit)}
	}
}

// outdated reports whether the query of generation gen has been replaced.
func outdated(gen uint64, latest *atomic.Uint64) func() bool {
	return func() bool { return latest.Load() != gen }
}

func indexOfKey(rows []string, key string) int {
	if key == "" {
		return -1
	}
	return slices.Index(rows, key)
}

// releaseCmd force-releases seen.Key only if it still holds the value the operator saw.
func releaseCmd(ctx context.Context, admin *actions.Admin, id uint64, seen *scanner.Lock, reason string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		expect, err := expectedValue(ctx, admin, seen)
		if err != nil {
			return stoppedActionMsg(ctx, admin, id, actions.Result{Action: actions.ActionRelease}, seen, err, reason)
		}
		res, err := admin.Release(ctx, seen.Key, expect, reason)
		return actionDoneMsg{id: id, action: actions.ActionRelease, key: seen.Key, seen: seen, result: res, err: err}
	}
}

// extendCmd sets a new TTL on seen.Key only if it still holds the value the operator saw;
// below what the lock has left only when shorten says the operator confirmed that.
func extendCmd(ctx context.Context, admin *actions.Admin, id uint64, seen *scanner.Lock, ttl time.Duration, shorten bool, reason string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		expect, err := expectedValue(ctx, admin, seen)
		if err != nil {
			return stoppedActionMsg(ctx, admin, id, actions.Result{Action: actions.ActionExtend, TTL: ttl}, seen, err, reason)
		}
		extend := admin.Extend
		if shorten {
			extend = admin.ExtendAllowingShorten
		}
		res, err := extend(ctx, seen.Key, expect, ttl, reason)
		return actionDoneMsg{id: id, action: actions.ActionExtend, key: seen.Key, seen: seen, result: res, err: err}
	}
}

// stoppedActionMsg is the result of an attempt (Action and TTL) on seen that stopped before its
// script because its exact value could not be found (err): recorded in the audit trail as
// failed, as the CLI records an attempt whose read fails.
func stoppedActionMsg(ctx context.Context, admin *actions.Admin, id uint64, attempt actions.Result, seen *scanner.Lock, err error, reason string) actionDoneMsg {
	attempt.Key, attempt.Seen, attempt.Outcome = seen.Key, seen.Value, actions.Failed
	recorded := actions.Result{AuditErr: admin.RecordStopped(ctx, attempt, err, reason)}
	return actionDoneMsg{id: id, action: attempt.Action, key: seen.Key, seen: seen, result: recorded, err: err}
}

// recordDeclinedCmd writes the audit record of a dialog answered No about seen (attempt's
// Seen is filled here: reading a cut value is IO).
func recordDeclinedCmd(ctx context.Context, admin *actions.Admin, seen *scanner.Lock, attempt actions.Result, reason string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		if expect, err := expectedValue(ctx, admin, seen); err == nil {
			attempt.Seen = expect
		} else {
			attempt.Seen = seen.Value
		}
		return declineRecordedMsg{key: seen.Key, err: admin.RecordStopped(ctx, attempt, nil, reason)}
	}
}

// expectedValue is the exact value an action compares against: the census's value (a hash
// in canonical form), or, for a string the census cut at scanner.ValueCap, the whole value
// read now when it still starts with what the operator saw. If it no longer does, the
// census value is returned and the compare reports the change of hands truthfully. (A new
// value that shares the first ValueCap bytes cannot be told apart: the CLI's release shows
// the whole value when that matters.)
func expectedValue(ctx context.Context, admin *actions.Admin, seen *scanner.Lock) (string, error) {
	expect, err := actions.ExpectFor(*seen)
	if !errors.Is(err, actions.ErrInexactValue) || !seen.Truncated || seen.Type != "string" {
		return expect, err
	}
	held, err := admin.Peek(ctx, seen.Key)
	if err != nil {
		return "", err
	}
	if !held.Exists || !strings.HasPrefix(held.Value, seen.Value) {
		return seen.Value, nil
	}
	return held.Value, nil
}

// loadAuditCmd reads the newest records of the audit trail.
func loadAuditCmd(ctx context.Context, admin *actions.Admin, id uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		recs, err := admin.Audit(ctx, auditLimit)
		return auditLoadedMsg{id: id, records: recs, err: err}
	}
}
