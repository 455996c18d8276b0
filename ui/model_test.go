package ui

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

func TestCensusLoadsSortedByKey(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	want := []string{"lock:cart:7", "lock:inv:9", "lock:order:1001", "lock:pay:55", "lock:queue"}
	if got := visibleKeys(m); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	c := m.view.counts
	// lock:queue is a list: counted apart, and its lack of a TTL is no lock's.
	if c.total != 5 || c.other != 1 || c.noExpiry != 1 || c.soon != 1 || c.stuck != 1 {
		t.Fatalf("counts %+v, want total 5, other 1, never-expire 1, soon 1, stuck 1", c)
	}
}

func TestFilterSubstringGlobAndClear(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	typeKeys(m, "/", "order")
	if !m.filter.active {
		t.Fatal("/ did not open the filter prompt")
	}
	if got := visibleKeys(m); !slices.Equal(got, []string{"lock:order:1001"}) {
		t.Fatalf("substring filter: %v", got)
	}
	typeKeys(m, "enter")
	if m.filter.active || m.filter.value() != "order" {
		t.Fatalf("enter should keep the filter and leave the prompt: active=%v value=%q", m.filter.active, m.filter.value())
	}
	// Keys go to the table again: q would quit, j moves.
	if cmd := typeKeys(m, "j"); isQuit(cmd) {
		t.Fatal("j quit")
	}

	typeKeys(m, "/")
	for range len("order") {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "WORKER") // case-insensitive, matches the holder node
	if got := visibleKeys(m); !slices.Equal(got, []string{"lock:cart:7"}) {
		t.Fatalf("holder filter: %v", got)
	}
	for range len("WORKER") {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "lock:*:[0-9]")
	if got := visibleKeys(m); !slices.Equal(got, []string{"lock:cart:7", "lock:inv:9"}) {
		t.Fatalf("glob filter: %v", got)
	}
	typeKeys(m, "esc")
	if m.filter.active || m.filter.value() != "" || len(m.view.rows) != 5 {
		t.Fatalf("esc should clear the filter: active=%v value=%q rows=%d", m.filter.active, m.filter.value(), len(m.view.rows))
	}
}

func TestQuitKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	if !isQuit(typeKeys(m, "q")) {
		t.Fatal("q does not quit")
	}
	typeKeys(m, "/")
	if isQuit(typeKeys(m, "q")) {
		t.Fatal("q typed into the filter quit")
	}
	if !isQuit(typeKeys(m, "ctrl+c")) {
		t.Fatal("ctrl+c does not quit from the filter prompt")
	}
}

func TestSortKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	cases := []struct {
		key  string
		want []string
	}{
		// Never-expiring first (by key among them), then the soonest deadline.
		{"T", []string{"lock:cart:7", "lock:queue", "lock:pay:55", "lock:order:1001", "lock:inv:9"}},
		{"T", []string{"lock:inv:9", "lock:order:1001", "lock:pay:55", "lock:queue", "lock:cart:7"}},
		// Oldest first, unknown acquisition time last.
		{"A", []string{"lock:cart:7", "lock:order:1001", "lock:inv:9", "lock:pay:55", "lock:queue"}},
		// Holder node, unknown last (by key among them), as in `ls --sort holder`.
		{"H", []string{"lock:order:1001", "lock:cart:7", "lock:inv:9", "lock:pay:55", "lock:queue"}},
		{"K", []string{"lock:cart:7", "lock:inv:9", "lock:order:1001", "lock:pay:55", "lock:queue"}},
	}
	for _, c := range cases {
		typeKeys(m, c.key)
		if got := visibleKeys(m); !slices.Equal(got, c.want) {
			t.Fatalf("after %s (sort %v desc %v): %v, want %v", c.key, m.query.sort, m.query.desc, got, c.want)
		}
	}
}

func TestSelectionFollowsKeyAcrossSort(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:pay:55")
	typeKeys(m, "T")
	if m.table.selKey != "lock:pay:55" || m.view.rows[m.table.cursor] != "lock:pay:55" {
		t.Fatalf("selection moved to %q", m.view.rows[m.table.cursor])
	}
}

func TestReleaseDialogDefaultsToNo(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:pay:55") // 3 s left: no typed confirmation
	typeKeys(m, "d")
	if m.dialog == nil || m.dialog.typed {
		t.Fatalf("d should open a plain confirmation dialog, got %+v", m.dialog)
	}
	mustContain(t, screen(m), "Force-release this lock?")
	clk.advance(time.Second)
	typeKeys(m, "enter") // its command only records the No in the audit trail
	if m.dialog != nil || m.actionSeq != 0 || m.pending != 0 {
		t.Fatalf("enter on the default button must cancel: dialog=%v actions=%d", m.dialog != nil, m.actionSeq)
	}
	mustContain(t, screen(m), "answered No")
}

func TestReleaseDialogIgnoresEarlyKeys(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:pay:55")
	typeKeys(m, "d")
	// A key held down when the dialog opened: tab to Release and enter, within the guard.
	clk.advance(100 * time.Millisecond)
	typeKeys(m, "tab", "enter", "esc")
	if m.dialog == nil || m.dialog.onYes || m.actionSeq != 0 {
		t.Fatalf("keys inside the guard acted: open=%v onYes=%v actions=%d", m.dialog != nil, m.dialog != nil && m.dialog.onYes, m.actionSeq)
	}
	clk.advance(inputGuard)
	typeKeys(m, "tab")
	cmd := typeKeys(m, "enter")
	if m.dialog != nil || cmd == nil || m.actionSeq != 1 || m.pending != 1 {
		t.Fatalf("Release after the guard: open=%v cmd=%v actions=%d pending=%d", m.dialog != nil, cmd != nil, m.actionSeq, m.pending)
	}
	mustContain(t, screen(m), "releasing lock:pay:55")
}

func TestReleaseLiveLockNeedsTypedKey(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001") // 25 s left
	typeKeys(m, "d")
	if m.dialog == nil || !m.dialog.typed {
		t.Fatal("a lock with 25s left must ask for the key name")
	}
	clk.advance(time.Second)
	typeKeys(m, "tab", "enter")
	if m.dialog == nil || m.actionSeq != 0 {
		t.Fatal("Release without typing the key went through")
	}
	mustContain(t, screen(m), "not the key name")
	typeKeys(m, "lock:order:100")
	if typeKeys(m, "enter"); m.dialog == nil || m.actionSeq != 0 {
		t.Fatal("a wrong key name confirmed")
	}
	typeKeys(m, "1")
	cmd := typeKeys(m, "enter")
	if m.dialog != nil || cmd == nil || m.actionSeq != 1 {
		t.Fatalf("the right key name did not confirm: open=%v cmd=%v", m.dialog != nil, cmd != nil)
	}
}

// TestReleaseTypedKeyThenEnterReleases: typing the key name is the deliberate act, so enter
// releases without a tab to the button; ↓ moves to the reason recorded in the audit trail.
func TestReleaseTypedKeyThenEnterReleases(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "d")
	clk.advance(time.Second)
	typeKeys(m, "lock:order:1001", "down", "INC-1 stuck deploy")
	if m.dialog == nil || m.dialog.inputs[0].Value() != "lock:order:1001" || auditReason(m.dialog) != "INC-1 stuck deploy" {
		t.Fatalf("key and reason not typed into their fields: %+v", m.dialog)
	}
	if cmd := typeKeys(m, "enter"); m.dialog != nil || cmd == nil || m.actionSeq != 1 {
		t.Fatalf("enter after the matching key name did not release: open=%v", m.dialog != nil)
	}
}

func TestNoExpiryLockNeedsTypedKey(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:cart:7")
	typeKeys(m, "d")
	if m.dialog == nil || !m.dialog.typed {
		t.Fatal("a lock without expiry must ask for the key name")
	}
}

func TestDialogEscCancels(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:pay:55")
	typeKeys(m, "d")
	clk.advance(time.Second)
	typeKeys(m, "tab", "esc")
	if m.dialog != nil || m.actionSeq != 0 {
		t.Fatal("esc did not cancel")
	}
}

func TestNotALockCannotBeReleased(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:queue")
	typeKeys(m, "d")
	if m.dialog != nil {
		t.Fatal("a list under the pattern got a release dialog")
	}
	mustContain(t, screen(m), "is not a lock")
}

func TestExtendDialog(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "e")
	if m.dialog == nil || m.dialog.kind != dialogExtend {
		t.Fatalf("e should open the extend dialog: %+v", m.dialog)
	}
	if d, ok := m.dialog.ttl(); !ok || d < m.selected().RemainingAt(clk.now()) {
		t.Fatalf("the extend dialog's default %q would shorten the lock", m.dialog.inputs[0].Value())
	}
	clk.advance(time.Second)
	for range len(m.dialog.inputs[0].Value()) {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "soon", "tab", "enter")
	if m.dialog == nil || m.actionSeq != 0 {
		t.Fatal("an invalid duration was accepted")
	}
	for range 4 {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "2m")
	if d, ok := m.dialog.ttl(); !ok || d != 2*time.Minute {
		t.Fatalf("ttl %v %v", d, ok)
	}
	if cmd := typeKeys(m, "enter"); cmd == nil || m.dialog != nil || m.actionSeq != 1 {
		t.Fatal("extend with a valid duration did not start")
	}
}

// TestExtendShorteningAsksAgain: a TTL below what the lock has left is set only after a
// second, explicit y (enter or n go back to the dialog).
func TestExtendShorteningAsksAgain(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001") // 25s left
	typeKeys(m, "e")
	clk.advance(time.Second)
	for range len(m.dialog.inputs[0].Value()) {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "5s", "tab", "enter")
	if m.dialog == nil || !m.dialog.shortenAsk || m.actionSeq != 0 {
		t.Fatal("a shorter TTL was not asked about again")
	}
	mustContain(t, screen(m), "shorten 24s to 5.0s? [y/N]") // what is left when answered
	typeKeys(m, "enter")
	if m.dialog == nil || m.dialog.shortenAsk || m.actionSeq != 0 {
		t.Fatal("enter (the default No) should go back to the dialog")
	}
	typeKeys(m, "enter", "y")
	if m.dialog != nil || m.actionSeq != 1 {
		t.Fatal("y did not shorten")
	}
}

// TestExtendShortenQuestionUsesTheTimeLeftNow: what is shortened is measured when the dialog is
// answered: a TTL above what is left by then lengthens the lock and needs no second question.
func TestExtendShortenQuestionUsesTheTimeLeftNow(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001") // 25s left
	typeKeys(m, "e")
	clk.advance(21 * time.Second) // 4s left
	for range len(m.dialog.inputs[0].Value()) {
		typeKeys(m, "backspace")
	}
	typeKeys(m, "10s", "tab", "enter")
	if m.dialog != nil || m.actionSeq != 1 {
		t.Fatalf("10s on a lock with 4s left was asked about as a shortening:\n%s", screen(m))
	}
}

func TestReadOnlyHidesActions(t *testing.T) {
	m, clk := newTestModel(t, 120, 30, readOnly)
	selectKey(t, m, "lock:pay:55")
	typeKeys(m, "d")
	typeKeys(m, "e")
	if m.dialog != nil {
		t.Fatal("read-only opened an action dialog")
	}
	s := screen(m)
	mustContain(t, s, "READ-ONLY")
	mustNotContain(t, s, "force-release")
	mustContain(t, s, "locks cannot be released or extended") // d and e say why nothing happens
	// The same from the detail view.
	m.notice = notice{}
	typeKeys(m, "enter", "d")
	mustContain(t, screen(m), "locks cannot be released or extended")
	typeKeys(m, "esc")
	typeKeys(m, "?")
	s = screen(m)
	mustNotContain(t, s, "force-release")
	mustNotContain(t, s, "extend ttl")
	mustContain(t, s, "audit trail") // reading the trail is not an action
	clk.advance(time.Second)
	// Even a dialog forced open cannot run an action.
	typeKeys(m, "esc")
	d := newReleaseDialog(m.selected(), clk.now(), m.st)
	if cmd := m.startAction(&d); cmd != nil {
		t.Fatal("read-only started an action")
	}
}

func TestStaleViewBuildDropped(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	m.syncLimit = 0 // every build runs as a command
	first := typeKeys(m, "/", "o")
	if first == nil || !m.building {
		t.Fatal("no build command for a filter change")
	}
	// The user types on while the first build runs: no second build yet, only dirty.
	if cmd := typeKeys(m, "r"); !m.dirty || hasViewBuild(cmd) {
		t.Fatal("a second build started while one was in flight")
	}
	msg := findViewBuilt(first)
	if msg.gen == m.queryGen {
		t.Fatal("the first build should be a generation behind")
	}
	before := visibleKeys(m)
	_, next := m.Update(msg)
	if !slices.Equal(visibleKeys(m), before) {
		t.Fatalf("a stale build was installed: %v", visibleKeys(m))
	}
	fresh := findViewBuilt(next)
	if fresh.gen != m.queryGen {
		t.Fatal("no fresh build after dropping the stale one")
	}
	m.Update(fresh)
	if got := visibleKeys(m); !slices.Equal(got, []string{"lock:cart:7", "lock:order:1001"}) { // "or" is in worker-3 too
		t.Fatalf("fresh build: %v", got)
	}
}

func hasViewBuild(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := findViewBuiltOK(cmd)
	return ok
}

func findViewBuilt(cmd tea.Cmd) viewBuiltMsg {
	msg, ok := findViewBuiltOK(cmd)
	if !ok {
		panic("no view build in command")
	}
	return msg
}

func findViewBuiltOK(cmd tea.Cmd) (viewBuiltMsg, bool) {
	if cmd == nil {
		return viewBuiltMsg{}, false
	}
	msg := cmd()
	if built, ok := msg.(viewBuiltMsg); ok {
		return built, true
	}
	cmds, _ := subCmds(msg)
	for _, c := range cmds {
		if v, ok := findViewBuiltOK(c); ok {
			return v, true
		}
	}
	return viewBuiltMsg{}, false
}

func TestPassDonePrunesVanishedKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	keep := fixture()[:2]
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: keep})
	if len(m.view.rows) != 5 {
		t.Fatal("keys dropped before the pass completed")
	}
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0}})
	if got := visibleKeys(m); !slices.Equal(got, []string{"lock:cart:7", "lock:order:1001"}) {
		t.Fatalf("after pass 2: %v", got)
	}
	// A stale pass-done (older generation) changes nothing.
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1, Census: scanner.Census{FetchedAt: t0.Add(-time.Hour)}})
	if m.passGen != 2 || m.status.scanAt != t0 {
		t.Fatalf("stale pass-done applied: gen %d scanAt %v", m.passGen, m.status.scanAt)
	}
}

func TestPartialPassKeepsKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0, Missing: []string{"10.0.0.2:6379"}}})
	if len(m.view.rows) != 5 {
		t.Fatalf("a partial pass dropped keys: %v", visibleKeys(m))
	}
	mustContain(t, screen(m), "partial census: cannot read 10.0.0.2:6379")
}

func TestGoneDeltaRemovesKey(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{{Key: "lock:pay:55", Gone: true}}})
	if slices.Contains(visibleKeys(m), "lock:pay:55") {
		t.Fatal("a gone delta left the key")
	}
}

func TestReconnectingBannerKeepsTable(t *testing.T) {
	m, _ := newTestModel(t, 160, 30) // wide enough for the whole error
	feed(m, scanner.Update{Kind: scanner.UpdateRetrying, Gen: 2, Attempt: 3, RetryIn: 400 * time.Millisecond,
		Addr: "127.0.0.1:6379", Err: errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")})
	s := screen(m)
	mustContain(t, s, "reconnecting…")
	mustContain(t, s, "connection refused")
	mustContain(t, s, "lock:order:1001")
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: fixture()[:1]})
	s = screen(m)
	mustNotContain(t, s, "reconnecting…")
	mustContain(t, s, "reconnected")
	mustContain(t, s, "● live")
}

// TestBannerSaysTheTableIsOldBeforeTheError: on a narrow screen a long error is cut, never
// what the operator must know (docs/tui.md's wording).
func TestBannerSaysTheTableIsOldBeforeTheError(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	feed(m, scanner.Update{Kind: scanner.UpdateRetrying, Gen: 2, Attempt: 3, RetryIn: 400 * time.Millisecond,
		Addr: "127.0.0.1:6379", Err: errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")})
	mustContain(t, screen(m), "reconnecting… the table shows the last census · attempt 3, next in 400ms")
}

// TestExpiredTTLShownInFull: a TTL extrapolated to zero reads `expired`, as docs/tui.md says.
func TestExpiredTTLShownInFull(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	clk.advance(4 * time.Second) // lock:pay:55 had 3 s left
	m.Update(tickMsg(clk.now()))
	if !regexp.MustCompile(`lock:pay:55 .* expired `).MatchString(screen(m)) {
		t.Fatalf("the TTL of an expired lock is not `expired`:\n%s", screen(m))
	}
}

func TestScanErrorShowsBanner(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	feed(m, scanner.Update{Kind: scanner.UpdateError, Gen: 2, Err: errors.New("EOF")})
	mustContain(t, screen(m), "reconnecting… the table shows the last census · scan failed: EOF")
	if len(m.view.rows) != 5 {
		t.Fatal("a failed pass dropped keys")
	}
}

func TestActionResultsAreShown(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	seen := m.locks.get("lock:order:1001")
	cases := []struct {
		res  actions.Result
		err  error
		want string
	}{
		{actions.Result{Outcome: actions.ChangedHands, Current: "api-9:req-77:1796029200000:aaaaaaaaaaaaaaaa"}, nil,
			"NOT released: lock:order:1001 changed hands, now held by api-9 (trace req-77, acquired 2026-11-30T09:00:00.000Z"},
		{actions.Result{Outcome: actions.AlreadyGone}, nil, "lock:order:1001 was already gone"},
		{actions.Result{}, errors.New("dial tcp: connection refused"), "release of lock:order:1001 failed: dial tcp: connection refused"},
		{actions.Result{Outcome: actions.Released, AuditErr: errors.New("NOPERM xadd")}, nil, "audit record not written"},
	}
	for i, c := range cases {
		m.pending = 1
		c.res.Action, c.res.Key = actions.ActionRelease, "lock:order:1001"
		_, cmd := m.Update(actionDoneMsg{id: uint64(i + 1), action: actions.ActionRelease, key: "lock:order:1001", seen: seen, result: c.res, err: c.err})
		runSync(m, cmd)
		mustContain(t, screen(m), c.want)
		if m.events.entries[len(m.events.entries)-1].kind != kindAction {
			t.Fatal("the action result is not in the event log")
		}
	}
	if slices.Contains(visibleKeys(m), "lock:order:1001") {
		t.Fatal("a released lock stayed in the table")
	}
}

func TestEventsLoggedAndWaitersCounted(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	_, cmd := m.Update(eventMsg{event: protocol.Event{Type: string(locklib.EventWaiting), Key: "lock:pay:55", Node: "api-3", Waiters: 4, AtMs: t0.UnixMilli()}})
	if cmd != nil {
		t.Fatal("with no stream, no re-subscription command is expected")
	}
	if m.waiters["lock:pay:55"] != 4 {
		t.Fatalf("waiters %v", m.waiters)
	}
	s := screen(m)
	mustContain(t, s, "waiting")
	mustContain(t, s, "waiters=4")
	m.Update(eventMsg{event: protocol.Event{Type: string(locklib.EventReleased), Key: "lock:pay:55", AtMs: t0.UnixMilli()}})
	if _, ok := m.waiters["lock:pay:55"]; ok {
		t.Fatal("released did not reset the waiter count")
	}
}

func TestTickAdvancesCountdown(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	mustContain(t, screen(m), "25s")
	clk.advance(5 * time.Second)
	m.Update(tickMsg(clk.now()))
	s := screen(m)
	mustContain(t, s, "20s")
	mustNotContain(t, s, " 25s ")
}

func TestDetailPane(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "enter")
	s := screen(m)
	for _, want := range []string{"details", "api-7", "req-42", "1042", "25s left", "9abcdef"} {
		mustContain(t, s, want)
	}
	typeKeys(m, "esc")
	mustNotContain(t, screen(m), "─ details ─")
}

func TestMouseWheelAndClick(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	many := make([]scanner.Lock, 200)
	for i := range many {
		many[i] = scanner.Lock{Key: fmt.Sprintf("lock:m:%03d", i), TTL: time.Minute, FetchedAt: t0}
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: many})
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if m.table.offset != wheelStep {
		t.Fatalf("wheel down: offset %d", m.table.offset)
	}
	lay := m.layout()
	m.Update(tea.MouseClickMsg{Button: tea.MouseLeft, X: 5, Y: lay.tableTop + 1 + 2})
	if m.table.cursor != m.table.offset+2 {
		t.Fatalf("click selected row %d, want %d", m.table.cursor, m.table.offset+2)
	}
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if m.table.offset != 0 {
		t.Fatalf("wheel up: offset %d", m.table.offset)
	}
}

func TestHelpToggles(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	typeKeys(m, "?")
	s := screen(m)
	mustContain(t, s, "sort by holder")
	mustContain(t, s, "force-release")
	if isQuit(typeKeys(m, "q")) || m.showHelp {
		t.Fatal("q should close the help, not quit")
	}
}

func TestAuditViewDropsStaleLoads(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	if cmd := typeKeys(m, "a"); cmd == nil || !m.audit.open || !m.audit.loading {
		t.Fatal("a did not open and load the audit trail")
	}
	typeKeys(m, "r") // reload: the first load is now stale
	rec := actions.AuditRecord{Time: t0, Operator: "alice@host", Action: actions.ActionRelease, Key: "lock:old", Result: actions.Released}
	m.Update(auditLoadedMsg{id: 1, records: []actions.AuditRecord{rec}})
	if !m.audit.loading || len(m.audit.records) != 0 {
		t.Fatal("a stale audit load was installed")
	}
	rec.Key = "lock:new"
	m.Update(auditLoadedMsg{id: 2, records: []actions.AuditRecord{rec}})
	s := screen(m)
	mustContain(t, s, "lock:new")
	mustContain(t, s, "alice@host")
	typeKeys(m, "esc")
	if m.audit.open {
		t.Fatal("esc did not close the audit view")
	}
}

// TestDemoPanePlugsIn checks the root model's side of Options.Demo: the pane gets rows under
// the table, its messages and keys, but not keys typed into the filter.
func TestDemoPanePlugsIn(t *testing.T) {
	rec := &recordingDemo{snap: demoTestSnapshot()}
	m, _ := newTestModel(t, 120, 40, func(o *Options) { o.Demo = rec })
	cmd := m.Init()
	if cmd == nil {
		t.Fatal("no Init command")
	}
	m.Update(m.demo.snapshot(false, 0)()) // what Init's demo command delivers
	s := screen(m)
	mustContain(t, s, "─ demo ─")
	mustContain(t, s, "demo-w1")
	mustContain(t, s, "lock:order:1001") // the table keeps its rows
	if lay := m.layout(); lay.demoRows == 0 || lay.tableRows < 5 {
		t.Fatalf("layout %+v", lay)
	}
	if cmd := typeKeys(m, "x"); cmd == nil {
		t.Fatal("x (crash worker) was not handed to the demo pane")
	}
	typeKeys(m, "/", "x")
	if m.filter.value() != "x" {
		t.Fatalf("a key typed into the filter went to the demo pane: filter %q", m.filter.value())
	}
	typeKeys(m, "esc", "?")
	mustContain(t, screen(m), "crash worker")
}

func TestClusterDetailNamesTheMaster(t *testing.T) {
	for _, mode := range []connect.Mode{connect.Cluster, connect.Standalone} {
		m, _ := newTestModel(t, 140, 40, func(o *Options) { o.Target.Mode = mode })
		lock := fixture()[0]
		lock.Addr = "10.0.0.7:7001"
		feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{lock}})
		selectKey(t, m, lock.Key)
		typeKeys(m, "enter")
		// A standalone target has one server, named in the status bar already.
		if mode == connect.Cluster {
			mustContain(t, screen(m), "master    10.0.0.7:7001")
		} else {
			mustNotContain(t, screen(m), "10.0.0.7:7001")
		}
	}
}

func TestRedlockDetailShowsInstancesAndQuorum(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	v := "api-7:req-1:1796029110000:0123456789abcdef"
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{{
		Key: "lock:rl:1", Format: scanner.FormatLockscope, Node: "api-7", Trace: "req-1", Value: v,
		TTL: 20 * time.Second, FetchedAt: t0,
		Quorum: &scanner.Quorum{Agree: 1, Needed: 2, Total: 3, Reached: false, Instances: []scanner.Instance{
			{Addr: "10.0.0.1:6379", Present: true, Value: v, TTL: 20 * time.Second},
			{Addr: "10.0.0.2:6379", Present: true, Value: "api-9:req-2:1796029110000:aaaaaaaaaaaaaaaa", TTL: 3 * time.Second},
			{Addr: "10.0.0.3:6379", Missing: true},
		}},
	}}})
	selectKey(t, m, "lock:rl:1")
	typeKeys(m, "enter")
	s := screen(m)
	for _, want := range []string{"10.0.0.1:6379  ✓ agrees", "10.0.0.2:6379  ≠ other holder", "10.0.0.3:6379  ? unreadable",
		"1/3 agree, 2 needed: NOT reached"} {
		mustContain(t, s, want)
	}
}

func TestCensusRebuildsAreSpaced(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	m.syncLimit = 0
	batch := func() tea.Cmd {
		_, cmd := m.Update(scanMsg{update: scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: fixture()[:1]}})
		return cmd
	}
	first := batch()
	if !m.building {
		t.Fatal("no build for a batch")
	}
	batch() // arrives during the build
	m.Update(findViewBuilt(first))
	if !m.rebuildDue || m.building {
		t.Fatalf("the follow-up build should wait for rebuildGap: due=%v building=%v", m.rebuildDue, m.building)
	}
	if hasViewBuild(batch()) || m.building {
		t.Fatal("a batch started a build before the gap")
	}
	_, cmd := m.Update(rebuildMsg{})
	if !hasViewBuild(cmd) {
		t.Fatal("no build when the gap ended")
	}
	// A query change does not wait for a gap.
	batch()
	m.Update(findViewBuilt(cmd))
	if !m.rebuildDue {
		t.Fatal("no gap scheduled")
	}
	if cmd := typeKeys(m, "T"); !hasViewBuild(cmd) {
		t.Fatal("a sort change waited for the rebuild gap")
	}
}

func TestScannerWarningsAreLoggedOnce(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	w := "no permission to read values (GET): holders unknown"
	feed(m, scanner.Update{Kind: scanner.UpdateWarning, Gen: 2, Warning: w})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{FetchedAt: t0, Warnings: []string{w}}})
	n := 0
	for _, e := range m.events.entries {
		if e.kind == "warning" && e.text == w {
			n++
		}
	}
	if n != 1 || len(m.status.warnings) != 1 {
		t.Fatalf("warning logged %d times, counted %d", n, len(m.status.warnings))
	}
	s := screen(m)
	mustContain(t, s, "⚠ 1")
	mustContain(t, s, w)
}

// TestReleaseTypedKeyTakesThePrintedForm: a key is confirmed by typing it as the console
// prints it (present.Escape), the form every command takes back: a binary key's bytes cannot
// be typed, and a backslash shows doubled.
func TestReleaseTypedKeyTakesThePrintedForm(t *testing.T) {
	for _, key := range []string{"lock:bin:\xff", `lock:back\slash`} {
		m, clk := newTestModel(t, 120, 30)
		feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{{
			Key: key, Format: scanner.FormatOpaque, Type: "string", TTL: time.Minute, FetchedAt: t0, Value: "v",
		}}})
		selectKey(t, m, key)
		typeKeys(m, "d")
		clk.advance(time.Second)
		typeKeys(m, key, "tab") // tab: the Release button, which refuses a key name that differs
		if typeKeys(m, "enter"); m.dialog == nil || m.actionSeq != 0 {
			t.Fatalf("%q: the raw key name, not what the console shows, confirmed", key)
		}
		for range len(key) {
			typeKeys(m, "backspace")
		}
		printed := present.Escape(key)
		mustContain(t, screen(m), printed)
		typeKeys(m, printed)
		if cmd := typeKeys(m, "enter"); m.dialog != nil || cmd == nil || m.actionSeq != 1 {
			t.Fatalf("%q typed as shown (%s) did not confirm", key, printed)
		}
	}
}
