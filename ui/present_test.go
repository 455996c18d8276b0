package ui

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/present/presenttest"
	"github.com/lockscope/lockscope/scanner"
)

// TestTableAgreesWithCLI renders the shared fixture in the lock table: the same order, holder,
// age, TTL and flags as cli's TestLsTableAgreesWithTUI finds in `ls`.
func TestTableAgreesWithCLI(t *testing.T) {
	for sort, order := range presenttest.Orders {
		set := newLockSet(false)
		set.apply(derefAll(presenttest.Locks()), 1)
		v := buildView(set.snapshot(), viewQuery{filter: newMatcher(""), sort: sort}, viewBuild{now: presenttest.Now, stuckAfter: presenttest.StuckAfter})
		rc := rowContext{now: presenttest.Now, stuckAfter: presenttest.StuckAfter, jumped: notJumped,
			span: func(*scanner.Lock) time.Duration { return 0 }, st: monoStyles()}
		locks := make([]*scanner.Lock, len(v.rows))
		for i, key := range v.rows {
			locks[i] = set.get(key)
		}
		cols := layoutColumns(200, locks, false, notJumped)
		var keys []string
		for _, l := range locks {
			keys = append(keys, l.Key)
			row := []rune(ansi.Strip(cols.row(l, false, rc)))
			flags, f := string(row[:2]), strings.Fields(string(row[2:]))
			want := presenttest.Want[l.Key]
			if f[1] != want.Holder || f[3] != want.Age || f[4] != want.TTL {
				t.Errorf("%s: holder %q age %q ttl %q, want %+v", l.Key, f[1], f[3], f[4], want)
			}
			wantFlags := map[bool]string{true: present.FlagStuck.Mark(), false: " "}[want.Stuck] +
				map[bool]string{true: present.FlagNoExpiry.Mark(), false: " "}[want.NoExpiry]
			if flags != wantFlags {
				t.Errorf("%s: flags %q, want %q", l.Key, flags, wantFlags)
			}
		}
		if !slices.Equal(keys, order) {
			t.Errorf("sort %s: %v, want %v", sort, keys, order)
		}
	}
}

// TestDetailsAgreeWithCLI renders the shared fixture in the detail pane, the release dialog,
// the action notices and the audit view: the same timestamps, no-expiry long form, owners,
// holders and durations as cli's TestDetailsAgreeWithTUI finds in `show`, `release` and `audit`.
func TestDetailsAgreeWithCLI(t *testing.T) {
	st := monoStyles()
	for _, l := range presenttest.Locks() {
		want := presenttest.Details[l.Key]
		fields := paneFields(strings.Join(detailPane{}.lines(l, 200, presenttest.Now, nil, presenttest.StuckAfter, nil, "", "", "", nil, st), "\n"))
		if !strings.HasPrefix(fields["acquired"], want.Acquired) || !strings.HasPrefix(fields["ttl"], want.TTL) {
			t.Errorf("%s: acquired %q ttl %q, want %+v", l.Key, fields["acquired"], fields["ttl"], want)
		}
		if fields["owners"] != want.Owners {
			t.Errorf("%s: owners %q, want %q", l.Key, fields["owners"], want.Owners)
		}
		d := newReleaseDialog(l, presenttest.Now, st)
		dialog := paneFields(d.view(200, 40, presenttest.Now, st))
		if dialog["holder"] != want.Holder {
			t.Errorf("%s: dialog holder %q, want %q", l.Key, dialog["holder"], want.Holder)
		}
	}

	seen := presenttest.Locks()[0]
	changed, _ := resultText(actionDoneMsg{action: actions.ActionRelease, key: seen.Key, seen: seen,
		result: actions.Result{Outcome: actions.ChangedHands, Current: presenttest.ChangedHands}}, presenttest.Now, presenttest.Redact)
	extended, _ := resultText(actionDoneMsg{action: actions.ActionExtend, key: seen.Key, seen: seen,
		result: actions.Result{Outcome: actions.Extended, TTL: presenttest.Extend}}, presenttest.Now, presenttest.Redact)
	if !strings.HasSuffix(changed, "now held by "+presenttest.ChangedHandsHolder) || !strings.HasSuffix(extended, " to "+presenttest.ExtendText) {
		t.Errorf("notices %q and %q do not name the holder %q and the TTL %q", changed, extended, presenttest.ChangedHandsHolder, presenttest.ExtendText)
	}

	a := auditView{records: []actions.AuditRecord{presenttest.Audit}}
	lines := strings.Split(ansi.Strip(a.view(400, 10, presenttest.Redact, st)), "\n")
	for _, problem := range presenttest.AuditTableProblems(lines[1], lines[2]) {
		t.Error(problem)
	}
}

// paneFields are the labelled lines of a pane by label.
func paneFields(view string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(ansi.Strip(view), "\n") {
		if name, value, ok := strings.Cut(strings.Trim(line, "│║ "), " "); ok { // a dialog's border out
			if _, dup := fields[name]; !dup {
				fields[name] = strings.TrimSpace(value)
			}
		}
	}
	return fields
}

// TestShownErrorsAreRedacted: an error that quotes the target's password is shown without it,
// as the CLI shows it (connect.Target.Redact).
func TestShownErrorsAreRedacted(t *testing.T) {
	failed, _ := resultText(actionDoneMsg{action: actions.ActionRelease, key: "lock:a",
		err: errors.New("AUTH " + presenttest.Password + " failed")}, presenttest.Now, presenttest.Redact)
	m, _ := newTestModel(t, 80, 24)
	m.redact = presenttest.Redact
	m.audit.loadID = 7
	m.onAuditLoaded(auditLoadedMsg{id: 7, err: errors.New("dial: " + presenttest.Password)})
	m.warn("NOAUTH " + presenttest.Password)
	p := newDemoPane(&recordingDemo{snap: demoTestSnapshot(), err: errors.New("ERR " + presenttest.Password)}, presenttest.Redact)
	p.Update(demoActionMsg{err: errors.New("ERR " + presenttest.Password)})
	for what, shown := range map[string]string{"action error": failed, "audit error": m.audit.err,
		"warning": m.status.warnings[len(m.status.warnings)-1], "demo notice": p.notice} {
		if strings.Contains(shown, presenttest.Password) || !strings.Contains(shown, "***") {
			t.Errorf("%s not redacted: %q", what, shown)
		}
	}
}

// TestAuditViewShowsTTLAndResultWhenNarrow: on an 80-column screen the audit view still shows
// each record's TTL and result, which come before the wide columns that get cut.
func TestAuditViewShowsTTLAndResultWhenNarrow(t *testing.T) {
	r := presenttest.Audit
	r.Operator, r.Key = "oncall-engineer@bastion-host-7", "lock:orders:region-eu-west-1:batch-000017"
	r.Result, r.Error = actions.Extended, ""
	view := ansi.Strip(auditView{records: []actions.AuditRecord{r}}.view(80, 10, presenttest.Redact, monoStyles()))
	row := strings.Split(view, "\n")[2]
	if !strings.Contains(row, presenttest.ExtendText) || !strings.Contains(row, "extended") {
		t.Errorf("the audit row at 80 columns lacks the TTL %s or the result:\n%s", presenttest.ExtendText, view)
	}
}
