package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/present/presenttest"
	"github.com/lockscope/lockscope/scanner"
)

// TestLsTableAgreesWithTUI renders the shared fixture in the ls table: the same order,
// holder, age, TTL and flags as ui's TestTableAgreesWithCLI finds in the TUI's table.
func TestLsTableAgreesWithTUI(t *testing.T) {
	for sort, order := range presenttest.Orders {
		locks := presenttest.Locks()
		sortedLocks := slices.Clone(locks)
		present.SortLocks(sortedLocks, sort, false)
		var out bytes.Buffer
		if err := writeLocksTable(&out, sortedLocks, presenttest.StuckAfter); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, lsColumns) {
			t.Errorf("columns %v, want %v", got, lsColumns)
		}
		var keys []string
		for _, line := range lines[1 : len(lines)-1] { // header and summary out
			f := strings.Fields(line)
			keys = append(keys, f[0])
			want := presenttest.Want[f[0]]
			if f[1] != want.Holder || f[3] != want.Age || f[4] != want.TTL {
				t.Errorf("%s: holder %q age %q ttl %q, want %+v", f[0], f[1], f[3], f[4], want)
			}
			if strings.Contains(line, "STUCK") != want.Stuck || strings.Contains(line, "NO-EXPIRY") != want.NoExpiry {
				t.Errorf("%s: flags in %q, want %+v", f[0], line, want)
			}
		}
		if !slices.Equal(keys, order) {
			t.Errorf("--sort %s: %v, want %v", sort, keys, order)
		}
	}
}

// TestDetailsAgreeWithTUI renders the shared fixture in `show`, `release`'s results and the
// audit table: the same timestamps, no-expiry long form, owners, holders and durations as ui's
// TestDetailsAgreeWithCLI finds in the detail pane, the dialog, the notices and the audit view.
func TestDetailsAgreeWithTUI(t *testing.T) {
	for _, l := range presenttest.Locks() {
		want := presenttest.Details[l.Key]
		var out bytes.Buffer
		if err := writeShow(&out, l, presenttest.StuckAfter, l.FetchedAt, nil); err != nil {
			t.Fatal(err)
		}
		fields := showFields(out.String())
		if !strings.HasPrefix(fields["acquired"], want.Acquired) || !strings.HasPrefix(fields["ttl"], want.TTL) {
			t.Errorf("%s: acquired %q ttl %q, want %+v", l.Key, fields["acquired"], fields["ttl"], want)
		}
		if want.Owners != "" && fields["decoded"] != "owners "+want.Owners {
			t.Errorf("%s: decoded %q, want owners %q", l.Key, fields["decoded"], want.Owners)
		}
	}

	var out bytes.Buffer
	changed := actions.Result{Action: actions.ActionRelease, Key: "lock:a", Outcome: actions.ChangedHands, Current: presenttest.ChangedHands}
	extended := actions.Result{Action: actions.ActionExtend, Key: "lock:a", Outcome: actions.Extended, TTL: presenttest.Extend}
	for _, res := range []actions.Result{changed, extended} {
		if err := writeResult(&out, res, connect.Target{}, presenttest.Now, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"now held by " + presenttest.ChangedHandsHolder + "\n", "ttl " + presenttest.ExtendText + " "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("release/extend output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := writeAuditTable(&out, []actions.AuditRecord{presenttest.Audit}, presenttest.Redact); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for _, problem := range presenttest.AuditTableProblems(lines[0], lines[1]) {
		t.Error(problem)
	}
}

// showFields are show's rows by name.
func showFields(out string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, value, ok := strings.Cut(line, " "); ok && name != "" {
			fields[name] = strings.TrimSpace(value)
		}
	}
	return fields
}

// hostile is text from Redis that would clear the screen, retitle the terminal, forge a line
// and break UTF-8 if printed raw.
const hostile = "lock:\x1b[2J\x1b]0;pwned\x07\nforged line\xff\u202e"

// mustBeInert fails when out holds a control character other than the line breaks and the
// tabwriter's padding, or invalid UTF-8.
func mustBeInert(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if r == 0x1b || r == 0x07 || r == '\r' || r == 0x7f || r == 0xfffd || r == '\u202e' || (r < 0x20 && r != '\n' && r != '\t') {
			t.Fatalf("%s: control or invalid character %U at %d in %q", what, r, i, out)
		}
	}
	if strings.Contains(out, "\nforged line") {
		t.Fatalf("%s: a value forged a line: %q", what, out)
	}
}

func TestCLIOutputsEscapeHostileValues(t *testing.T) {
	now := time.Now()
	l := &scanner.Lock{Key: hostile, Format: scanner.FormatOpaque, Type: "string", Node: hostile, Trace: hostile,
		Value: hostile, TTL: time.Minute, FetchedAt: now, Addr: "127.0.0.1:1",
		Quorum: &scanner.Quorum{Agree: 1, Needed: 2, Total: 3, Instances: []scanner.Instance{{Addr: "a", Present: true, Value: hostile}}}}
	var ls, show, result, audit bytes.Buffer
	if err := writeLocksTable(&ls, []*scanner.Lock{l}, time.Minute); err != nil {
		t.Fatal(err)
	}
	mustBeInert(t, "ls", ls.String())
	if !strings.Contains(ls.String(), `lock:\x1b[2J`) {
		t.Errorf("ls does not show the key escaped:\n%s", ls.String())
	}
	if err := writeShow(&show, l, time.Minute, now, nil); err != nil {
		t.Fatal(err)
	}
	mustBeInert(t, "show", show.String())

	res := actions.Result{Action: actions.ActionRelease, Key: hostile, Outcome: actions.ChangedHands, Seen: hostile, Current: hostile,
		Instances: []actions.InstanceResult{{Addr: "a", Outcome: actions.ChangedHands, Current: hostile}, {Addr: "b", Outcome: actions.NotALock, Current: hostile}}}
	for _, o := range []actions.Outcome{actions.Released, actions.Extended, actions.ChangedHands, actions.NotALock, actions.AlreadyGone} {
		res.Outcome = o
		if err := writeResult(&result, res, connect.Target{}, now, false); err != nil {
			t.Fatal(err)
		}
		if err := resultExit(res, false); err != nil { // printed by run, as printf renders it
			var printed bytes.Buffer
			if err := printf(&printed, "lockscope: %s\n", err); err != nil {
				t.Fatal(err)
			}
			mustBeInert(t, "exit error", printed.String())
		}
	}
	mustBeInert(t, "release", result.String())
	mustBeInert(t, "held", string(heldText(actions.HeldValue{Addr: "a", Exists: true, Value: hostile, PTTL: time.Second}, connect.Target{}))+
		string(heldText(actions.HeldValue{Addr: "a", Err: errors.New(hostile)}, connect.Target{})))
	if got := string(present.Sprintf("%s", present.Holder(`x`+"\x1b", nil, now))); got != `value "x\x1b"` {
		t.Errorf("holder of a plain value: %s (the value is quoted, and escaped where printed)", got)
	}

	rec := actions.AuditRecord{Time: now, Operator: hostile, Action: actions.ActionRelease, Key: hostile, Seen: hostile,
		Result: actions.Failed, Error: hostile, Reason: hostile}
	// Every field of a record is read from Redis, the action and result too.
	forged := actions.AuditRecord{Time: now, Operator: "o", Action: actions.Action(hostile), Key: "k", Seen: "v",
		Result: actions.Outcome(hostile), Reason: "r"}
	if err := writeAuditTable(&audit, []actions.AuditRecord{rec, forged}, connect.Target{}.Redact); err != nil {
		t.Fatal(err)
	}
	mustBeInert(t, "audit", audit.String())

	// JSON: the key and the value carry the documented escaped form (present.Escape).
	var js bytes.Buffer
	if err := writeLocksJSON(&js, []*scanner.Lock{l}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(strings.TrimSuffix(js.String(), "\n"), "\x1b\x07\n\r") {
		t.Errorf("ls --json lets a control character through: %q", js.String())
	}
	var obj map[string]any
	if err := json.Unmarshal(js.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	if escaped := `lock:\x1b[2J\x1b]0;pwned\x07\nforged line\xff\u202e`; obj["key"] != escaped || obj["value"] != escaped {
		t.Errorf("ls --json key %q value %q", obj["key"], obj["value"])
	}
}
