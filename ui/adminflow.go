package ui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// The admin flow: a dialog, then an actions call in a command, then a result that is always
// shown (footer notice and event log), never swallowed.

// openDialog opens the release or extend dialog for the selected lock, as the operator sees
// it now: the action will compare against exactly this record's value.
func (m *Model) openDialog(kind dialogKind) {
	l := m.selected()
	if l == nil {
		m.setNotice("no lock selected", true)
		return
	}
	if l.Format == scanner.FormatNotALock {
		m.setNotice(l.Key+" is not a lock ("+l.Type+"): lockscope never touches it", true)
		return
	}
	// An RSemaphore's count may be a naive lock whose EXPIRE never came (MaybeNaiveLock): it
	// keeps a lock's dialogs, compared with the count seen, typed as a lock without expiry.
	if l.Shared != nil && !l.MaybeNaiveLock() {
		m.openSharedDialog(l, kind)
		return
	}
	var d confirmDialog
	if kind == dialogRelease {
		d = newReleaseDialog(l, m.clock(), m.st)
	} else {
		d = newExtendDialog(l, m.clock(), m.locks.span(l), m.st)
	}
	d.onServer = m.locks.byServer
	m.dialog = &d
}

// openSharedDialog is the release or extend of a read-write lock or semaphore l: of the holder
// under the detail view's cursor, one at a time (the others keep theirs).
func (m *Model) openSharedDialog(l *scanner.Lock, kind dialogKind) {
	h, ok := m.detail.selectedHolder(l)
	switch {
	case !m.detail.open:
		m.setNotice(l.Key+" has several holders: open its details (enter), select one (tab) and press d or e", false)
	case !ok:
		m.setNotice(l.Key+" has no live holder", false)
	default:
		d := newHolderDialog(l, h, m.clock(), m.st)
		if kind == dialogExtend {
			d = newHolderExtendDialog(l, h, m.clock(), m.st)
		}
		d.onServer = m.locks.byServer
		m.dialog = &d
	}
}

// openTogetherDialog asks before deleting the selected lock and the keys taken together with
// it (D in its detail view, once the census search found them).
func (m *Model) openTogetherDialog() {
	l := m.selected()
	if l == nil {
		return
	}
	if _, ok := m.detail.togetherText(l, m.locks.id(l)); !ok {
		m.setNotice("no other key is known to hold the value of "+l.Key+": nothing to release together", false)
		return
	}
	d := newTogetherDialog(l, m.detail.together.keys, m.clock(), m.st)
	d.onServer = m.locks.byServer
	m.dialog = &d
}

func (m *Model) onDialogKey(msg tea.KeyPressMsg) tea.Cmd {
	out, cmd := m.dialog.update(msg, m.clock(), m.keys)
	switch out {
	case dialogCancelled:
		d := m.dialog
		m.dialog = nil
		return m.recordDeclined(d)
	case dialogConfirmed:
		d := m.dialog
		m.dialog = nil
		return m.startAction(d)
	}
	return cmd
}

// startAction runs the confirmed action in a command.
func (m *Model) startAction(d *confirmDialog) tea.Cmd {
	if m.admin == nil || m.readOnly {
		m.setNotice("refused: read-only", true)
		return nil
	}
	m.actionSeq++
	m.pending++
	admin := m.admin.For(d.lock.Addr) // independent servers: the lock's server only
	switch d.kind {
	case dialogExtend:
		ttl, _ := d.ttl()
		m.setNotice("extending "+d.lock.Key+"…", false)
		return extendCmd(m.ctx, admin, m.actionSeq, d.lock, ttl, d.shortens(), auditReason(d))
	case dialogReleaseHolder:
		m.setNotice("releasing holder "+d.holder.ID+" of "+d.lock.Key+"…", false)
		return holderCmd(m.ctx, admin, m.actionSeq, d.lock, d.holder, actions.ActionReleaseHolder, 0, auditReason(d))
	case dialogExtendHolder:
		ttl, _ := d.ttl()
		m.setNotice("extending holder "+d.holder.ID+" of "+d.lock.Key+"…", false)
		return holderCmd(m.ctx, admin, m.actionSeq, d.lock, d.holder, actions.ActionExtendHolder, ttl, auditReason(d))
	case dialogReleaseTogether:
		m.setNotice("releasing "+d.lock.Key+" and the keys taken together with it…", false)
		return releaseTogetherCmd(m.ctx, admin, m.actionSeq, d.lock, d.together, auditReason(d))
	}
	m.setNotice("releasing "+d.lock.Key+"…", false)
	return releaseCmd(m.ctx, admin, m.actionSeq, d.lock, auditReason(d))
}

// auditReason is the reason the operator typed, else where the action came from.
func auditReason(d *confirmDialog) string {
	if r := d.reason(); r != "" {
		return r
	}
	if d.kind.extends() {
		return "extend from lockscope tui"
	}
	return "force-release from lockscope tui"
}

// recordDeclined writes the audit record of a dialog answered No (the trail holds every
// attempt) and says so.
func (m *Model) recordDeclined(d *confirmDialog) tea.Cmd {
	done := "released"
	attempt := actions.Result{Action: actions.ActionRelease, Key: d.lock.Key, Outcome: actions.Declined}
	switch d.kind {
	case dialogExtend:
		done = "extended"
		attempt.Action = actions.ActionExtend
		attempt.TTL, _ = d.ttl()
	case dialogReleaseHolder, dialogExtendHolder:
		attempt.Action, attempt.Holder = actions.ActionReleaseHolder, d.holder.ID
		if d.kind == dialogExtendHolder {
			done = "extended"
			attempt.Action = actions.ActionExtendHolder
			attempt.TTL, _ = d.ttl()
		}
		attempt.Seen, _ = actions.SeenFor(d.lock, d.holder)
	case dialogReleaseTogether:
		attempt.Action, attempt.Keys = actions.ActionReleaseTogether, append([]string{d.lock.Key}, d.together...)
	}
	m.setNotice("not "+done+": "+d.lock.Key+" (answered No, recorded in the audit trail)", false)
	if m.admin == nil || m.readOnly {
		return nil
	}
	return recordDeclinedCmd(m.ctx, m.admin.For(d.lock.Addr), d.lock, attempt, auditReason(d))
}

// onDeclineRecorded warns when the audit record of a declined dialog could not be written.
func (m *Model) onDeclineRecorded(msg declineRecordedMsg) {
	if msg.err == nil {
		return
	}
	text := "WARNING: audit record not written: " + m.redact(msg.err.Error()) + " — " + msg.key + " was not touched"
	m.setNotice(text, true)
	m.events.add(logEntry{at: m.clock(), kind: kindAction, text: text})
}

// onActionDone reports an action's result and updates the table at once for a lock that is
// now gone (the next scan confirms it).
func (m *Model) onActionDone(msg actionDoneMsg) tea.Cmd {
	m.pending = max(m.pending-1, 0)
	text, bad := resultText(msg, m.clock(), m.redact)
	if msg.result.AuditErr != nil {
		// First: the holder makes the result long, and a cut line must not hide the warning.
		text = "WARNING: audit record not written: " + m.redact(msg.result.AuditErr.Error()) + " — " + text
		bad = true
	}
	m.setNotice(text, bad)
	m.events.add(logEntry{at: m.clock(), kind: kindAction, text: text}) // the text names the key
	if msg.err == nil && msg.action != actions.ActionReleaseHolder && (msg.result.Outcome == actions.Released || msg.result.Outcome == actions.AlreadyGone) {
		id := m.locks.id(msg.seen)
		if cur := m.locks.get(id); cur != nil && cur.Value == msg.seen.Value {
			m.locks.remove(id)
			return m.requestView()
		}
	}
	return nil
}

// resultText says what an action did at now, in one line (as read: escaped when drawn); redact
// removes the target's passwords from an error.
func resultText(msg actionDoneMsg, now time.Time, redact func(string) string) (string, bool) {
	key := msg.key
	verb := "release"
	switch msg.action {
	case actions.ActionExtend:
		verb = "extend"
	case actions.ActionReleaseHolder:
		key = "holder " + msg.holder + " of " + msg.key
	case actions.ActionExtendHolder:
		verb, key = "extend", "holder "+msg.holder+" of "+msg.key
	case actions.ActionReleaseTogether:
		key = strings.Join(msg.result.Keys, ", ")
	}
	if msg.err != nil {
		if errors.Is(msg.err, actions.ErrReadOnly) {
			return verb + " refused: read-only mode", true
		}
		return verb + " of " + key + " failed: " + redact(msg.err.Error()), true
	}
	r := msg.result
	var text string
	bad := false
	switch r.Outcome {
	case actions.Released:
		text = "released " + key + " (was held by " + present.Holder(msg.seen.Value, msg.seen, now) + ")"
		if msg.action == actions.ActionReleaseHolder {
			text = "released " + key + " (its other holders keep theirs)"
		}
	case actions.Extended:
		text = "extended " + key + " to " + present.Duration(r.TTL)
	case actions.ChangedHands:
		text = "NOT " + verb + "d: " + key + " changed hands, now held by " + present.Holder(r.Current, nil, now)
		switch msg.action {
		case actions.ActionReleaseHolder:
			text = "NOT released: " + key + " holds something else since it was read (re-entered, or another lease)"
		case actions.ActionReleaseTogether:
			other, held := actions.OtherKey(r)
			text = "NOT released: none of " + key + ": " + other + " holds " + present.Holder(held, nil, now) + " now"
		}
		bad = true
	case actions.WouldShorten: // renewed since the dialog read it, or never expiring
		left := "no expiry"
		if r.TTLLeft >= 0 {
			left = present.Duration(r.TTLLeft) + " left"
		}
		text = "NOT extended: " + key + " has " + left + ", more than " + present.Duration(r.TTL) + ": not shortened"
		bad = true
	case actions.AlreadyGone:
		text = key + " was already gone: nothing to " + verb
	case actions.NotALock:
		text = key + " is not a lock (" + r.Current + "): left untouched"
		bad = true
	default:
		text = verb + " of " + key + ": " + string(r.Outcome)
		bad = true
	}
	if r.Partial() {
		failed := 0
		for _, in := range r.Instances {
			if in.Err != nil {
				failed++
			}
		}
		text += fmt.Sprintf(" (partial: %d of %s failed)", failed, present.Count(len(r.Instances), "instance"))
		bad = true
	}
	return text, bad
}

// openAudit shows the audit view and loads it.
func (m *Model) openAudit() tea.Cmd {
	if m.admin == nil {
		return nil
	}
	m.audit.open = true
	m.audit.loading = true
	m.audit.offset = 0
	m.audit.loadID++
	return loadAuditCmd(m.ctx, m.admin, m.audit.loadID)
}

func (m *Model) onAuditLoaded(msg auditLoadedMsg) {
	if msg.id != m.audit.loadID {
		return // a reload started since: this page is stale
	}
	m.audit.loading = false
	m.audit.records = msg.records
	m.audit.err = ""
	if msg.err != nil {
		m.audit.err = m.redact(msg.err.Error())
	}
}
