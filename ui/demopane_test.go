package ui

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/demo"
)

// recordingDemo is a DemoController that records the calls the pane makes and serves a
// fixed snapshot (the pane is tested alone; demo's own tests run the real Controller).
type recordingDemo struct {
	mu    sync.Mutex
	snap  demo.Snapshot
	calls []string
	err   error
}

func (r *recordingDemo) Snapshot() demo.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snap
}

func (r *recordingDemo) record(call string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	return r.err
}

func (r *recordingDemo) PauseWorker(id int) error  { return r.record(fmt.Sprintf("pause %d", id)) }
func (r *recordingDemo) ResumeWorker(id int) error { return r.record(fmt.Sprintf("resume %d", id)) }
func (r *recordingDemo) CrashWorker(id int) error  { return r.record(fmt.Sprintf("crash %d", id)) }

// AddWorker adds demo-w5 to the snapshot, as the Controller would.
func (r *recordingDemo) AddWorker() (int, error) {
	if err := r.record("add"); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.snap.Workers) + 1
	r.snap.Workers = append(r.snap.Workers, demo.WorkerSnapshot{ID: id, Name: fmt.Sprintf("demo-w%d", id), State: demo.Waiting})
	return id, nil
}

func demoTestSnapshot() demo.Snapshot {
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	return demo.Snapshot{
		Server: "embedded miniredis 127.0.0.1:41234", Addrs: []string{"127.0.0.1:41234"}, InstanceDown: -1,
		Scenario: demo.Mixed, Phase: demo.Crash, Protection: demo.FencingTokens,
		TTL: 2 * time.Second, Elapsed: 37 * time.Second,
		Workers: []demo.WorkerSnapshot{
			{ID: 1, Name: "demo-w1", State: demo.Working, Resource: "lock:demo:orders", Token: 1796022855046882, Holds: 12, WaitP50: 120 * time.Millisecond, WaitP99: 900 * time.Millisecond},
			{ID: 2, Name: "demo-w2", State: demo.Waiting, Resource: "lock:demo:orders", Holds: 11, WaitP50: 130 * time.Millisecond, WaitP99: time.Second},
			{ID: 3, Name: "demo-w3", State: demo.Paused, Resource: "lock:demo:payments", Token: 1796022855046001, Holds: 9, StaleRejected: 1},
			{ID: 4, Name: "demo-w4", State: demo.Crashed, Resource: "lock:demo:inventory", Holds: 10},
		},
		Counters: demo.Counters{Sections: 42, Handoffs: 30, StaleRejected: 1, ExpiredAfterCrash: 1},
		WaitP50:  125 * time.Millisecond, WaitP99: time.Second,
		Events: []demo.Event{{At: at, Text: "demo-w4 crashed holding lock:demo:inventory (token 7)"}},
	}
}

// loadedPane is a pane that has received its first snapshot.
func loadedPane(t *testing.T) (*demoPane, *recordingDemo) {
	t.Helper()
	rec := &recordingDemo{snap: demoTestSnapshot()}
	p := newDemoPane(rec, func(s string) string { return s })
	msg := p.Init()()
	if _, handled := p.Update(msg); !handled {
		t.Fatal("the pane did not handle its snapshot message")
	}
	return &p, rec
}

func demoKey(k string) tea.KeyPressMsg {
	switch k {
	case "[", "]", "p", "x", "+", "=":
		return tea.KeyPressMsg{Code: rune(k[0]), Text: k}
	}
	panic("no key " + k)
}

// run executes a command the pane returned, as Bubble Tea would, and feeds the result back.
func runDemoCmd(t *testing.T, p *demoPane, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command")
	}
	msg := cmd()
	if _, handled := p.Update(msg); !handled {
		t.Fatalf("result %T not handled", msg)
	}
}

func TestDemoPaneKeysCallTheController(t *testing.T) {
	p, rec := loadedPane(t)
	if p.selected != 1 {
		t.Fatalf("selected %d after the first snapshot, want worker 1", p.selected)
	}
	cmd, handled := p.Update(demoKey("p"))
	if !handled {
		t.Fatal("p not handled")
	}
	if len(rec.calls) != 0 {
		t.Fatal("the controller was called inside Update, not in a command")
	}
	runDemoCmd(t, p, cmd)
	for _, k := range []string{"]", "]"} { // to demo-w3, which is paused: p resumes it
		if _, handled := p.Update(demoKey(k)); !handled {
			t.Fatalf("%s not handled", k)
		}
	}
	cmd, _ = p.Update(demoKey("p"))
	runDemoCmd(t, p, cmd)
	cmd, _ = p.Update(demoKey("x"))
	runDemoCmd(t, p, cmd)
	cmd, _ = p.Update(demoKey("+"))
	runDemoCmd(t, p, cmd)
	// The worker added is confirmed and selected, so that its row is on screen.
	runDemoCmd(t, p, p.snapshot(false, 0))
	view := ansi.Strip(p.View(80, 15, newStyles(colorprofile.TrueColor, true)))
	if p.selected != 5 || !strings.Contains(view, "added demo-w5 (selected)") || !regexp.MustCompile(`demo-w5\s+waiting`).MatchString(view) {
		t.Fatalf("the added worker is not confirmed and shown (selected %d):\n%s", p.selected, view)
	}
	p.Update(demoKey("[")) // back to demo-w4
	cmd, _ = p.Update(demoKey("x"))
	runDemoCmd(t, p, cmd)
	want := []string{"pause 1", "resume 3", "crash 3", "add", "crash 4"}
	if strings.Join(rec.calls, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %v, want %v", rec.calls, want)
	}
	if p.notice != "" {
		t.Fatalf("notice %q after a success", p.notice)
	}
}

func TestDemoPaneShowsControllerErrors(t *testing.T) {
	p, rec := loadedPane(t)
	rec.err = errors.New("demo: worker crashed: demo-w1")
	cmd, _ := p.Update(demoKey("p"))
	runDemoCmd(t, p, cmd)
	if p.notice != rec.err.Error() {
		t.Fatalf("notice %q", p.notice)
	}
	if !strings.Contains(p.View(80, 15, newStyles(colorprofile.TrueColor, true)), "worker crashed") {
		t.Fatal("the error is not shown")
	}
}

func TestDemoPaneLeavesOtherKeysAlone(t *testing.T) {
	p, _ := loadedPane(t)
	for _, k := range []tea.KeyPressMsg{{Code: 'q', Text: "q"}, {Code: 'd', Text: "d"}, {Code: tea.KeyUp}, {Code: tea.KeyEnter}} {
		if _, handled := p.Update(k); handled {
			t.Errorf("%s was taken by the demo pane", k.String())
		}
	}
	if _, handled := p.Update(tickMsg(time.Now())); handled {
		t.Error("the root's tick was taken by the demo pane")
	}
}

// The refresh loop re-arms itself once per tick snapshot; a one-off snapshot does not start a
// second loop, and a stopped demo ends the loop.
func TestDemoPaneRefreshLoop(t *testing.T) {
	p, rec := loadedPane(t)
	if cmd, _ := p.Update(demoSnapshotMsg{snap: rec.snap, tick: true}); cmd == nil {
		t.Fatal("a tick snapshot did not re-arm the refresh")
	}
	if cmd, _ := p.Update(demoSnapshotMsg{snap: rec.snap}); cmd != nil {
		t.Fatal("a one-off snapshot started another refresh loop")
	}
	stopped := rec.snap
	stopped.Stopped = true
	if cmd, _ := p.Update(demoSnapshotMsg{snap: stopped, tick: true}); cmd != nil {
		t.Fatal("the refresh goes on after the demo stopped")
	}
}

// Every size down to 20 columns and 1 row: exactly height lines, none wider than width.
func TestDemoPaneViewFitsAnySize(t *testing.T) {
	p, rec := loadedPane(t)
	many := rec.snap
	for i := 5; i <= 40; i++ {
		many.Workers = append(many.Workers, demo.WorkerSnapshot{ID: i, Name: fmt.Sprintf("demo-w%d", i), State: demo.Waiting})
	}
	many.InstanceDown = 0
	many.Counters.Overlaps = 3
	p.Update(demoSnapshotMsg{snap: many})
	p.selected = 40 // the table must scroll to it
	st := newStyles(colorprofile.TrueColor, true)
	for _, size := range [][2]int{{120, 40}, {80, 24}, {60, 15}, {60, 5}, {20, 15}, {20, 3}, {20, 1}, {5, 2}} {
		w, h := size[0], size[1]
		out := p.View(w, h, st)
		lines := strings.Split(out, "\n")
		if len(lines) != h {
			t.Errorf("%dx%d: %d lines", w, h, len(lines))
		}
		for i, l := range lines {
			if lw := lipgloss.Width(l); lw > w {
				t.Errorf("%dx%d: line %d is %d wide: %q", w, h, i, lw, l)
			}
		}
		if h >= 15 && w >= 60 && !strings.Contains(out, "demo-w40") {
			t.Errorf("%dx%d: the selected worker is scrolled out of view:\n%s", w, h, out)
		}
		if h >= 3 && !strings.Contains(out, "overlaps") {
			t.Errorf("%dx%d: no overlap count:\n%s", w, h, out)
		}
	}
	if out := p.View(0, 10, st); out != "" {
		t.Errorf("zero width drew %q", out)
	}
}

func TestGoldenDemoPane80x15(t *testing.T) {
	p, _ := loadedPane(t)
	golden.RequireEqual(t, p.View(80, 15, newStyles(colorprofile.TrueColor, true)))
}

func TestGoldenDemoPaneNoColor60x15(t *testing.T) {
	p, _ := loadedPane(t)
	golden.RequireEqual(t, p.View(60, 15, newStyles(colorprofile.ASCII, true)))
}

// naiveTestSnapshot is the naive lock's run beside demoTestSnapshot: no tokens, overlaps and
// stale writes accepted, a lock left without a TTL.
func naiveTestSnapshot() demo.Snapshot {
	s := demoTestSnapshot()
	s.Lock, s.Protection = demo.Naive, demo.Unprotected
	s.Workers = []demo.WorkerSnapshot{
		{ID: 1, Name: "demo-w1", State: demo.Working, Resource: "lock:naive:orders", Holds: 14, WaitP50: 90 * time.Millisecond, WaitP99: 700 * time.Millisecond},
		{ID: 2, Name: "demo-w2", State: demo.Working, Resource: "lock:naive:orders", Holds: 13, WaitP50: 80 * time.Millisecond, WaitP99: 800 * time.Millisecond},
		{ID: 3, Name: "demo-w3", State: demo.Waiting, Resource: "lock:naive:payments", Holds: 11},
		{ID: 4, Name: "demo-w4", State: demo.Crashed, Resource: "lock:naive:inventory", Holds: 10},
	}
	s.Counters = demo.Counters{Sections: 48, Handoffs: 37, Overlaps: 4, StaleAccepted: 3, NoTTLLocks: 1}
	s.Events = []demo.Event{{At: s.Events[0].At, Text: "demo-w4 crashed between SETNX and EXPIRE of lock:naive:inventory: the key has no TTL"}}
	return s
}

// comparePane is a --compare pane with both snapshots loaded.
func comparePane(t *testing.T) (*demoPane, *recordingDemo, *recordingDemo) {
	t.Helper()
	lib, naive := &recordingDemo{snap: demoTestSnapshot()}, &recordingDemo{snap: naiveTestSnapshot()}
	lib.snap.Lock = demo.LockLib
	p := newDemoPane(lib, func(s string) string { return s })
	p.naive = naive
	if _, handled := p.Update(p.Init()()); !handled {
		t.Fatal("the pane did not handle its snapshot message")
	}
	return &p, lib, naive
}

// Under --compare the two runs stand side by side, each with every counter, and each key
// acts on the same worker of both runs.
func TestDemoPaneCompare(t *testing.T) {
	p, lib, naive := comparePane(t)
	view := ansi.Strip(p.View(120, 16, newStyles(colorprofile.TrueColor, true)))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`locklib\s+protection fencing-tokens\s+overlaps 0\s.*│ naive\s+protection none\s+overlaps 4 UNSAFE`),
		regexp.MustCompile(`demo-w1\s+working .*│ demo-w1\s+working`),
		regexp.MustCompile(`│ .*crashed between SETNX and EXPIRE`),
	} {
		if !want.MatchString(view) {
			t.Errorf("the compare view lacks %s:\n%s", want, view)
		}
	}
	var left, right strings.Builder
	for _, l := range strings.Split(view, "\n") {
		if l, r, ok := strings.Cut(l, "│"); ok {
			left.WriteString(l + "\n")
			right.WriteString(r + "\n")
		}
	}
	for col, want := range map[*strings.Builder][]string{
		&left:  {"stale accepted 0", "no ttl 0", "stale rejected 1", "crashed holding"},
		&right: {"stale accepted 3", "no ttl 1", "stale rejected 0", "between SETNX and EXPIRE"},
	} {
		for _, w := range want {
			if !strings.Contains(col.String(), w) {
				t.Errorf("column lacks %q:\n%s", w, col.String())
			}
		}
	}
	for _, k := range []string{"p", "x", "+"} {
		cmd, _ := p.Update(demoKey(k))
		runDemoCmd(t, p, cmd)
	}
	want := "pause 1,crash 1,add"
	if got := strings.Join(lib.calls, ","); got != want {
		t.Errorf("locklib run: calls %s, want %s", got, want)
	}
	if got := strings.Join(naive.calls, ","); got != want {
		t.Errorf("naive run: calls %s, want %s", got, want)
	}
	runDemoCmd(t, p, p.snapshot(false, 0)) // the worker added, selected in both runs
	naive.err = errors.New("demo: worker is already paused: demo-w5")
	cmd, _ := p.Update(demoKey("p"))
	runDemoCmd(t, p, cmd)
	if p.notice != naive.err.Error() {
		t.Errorf("notice %q, want the naive run's refusal", p.notice)
	}
}

// The compare view too: exactly height lines, none wider than width, at any size.
func TestDemoPaneCompareFitsAnySize(t *testing.T) {
	p, _, _ := comparePane(t)
	st := newStyles(colorprofile.TrueColor, true)
	for _, size := range [][2]int{{160, 40}, {120, 16}, {80, 24}, {60, 15}, {60, 5}, {20, 15}, {20, 3}, {20, 1}, {5, 2}} {
		w, h := size[0], size[1]
		lines := strings.Split(p.View(w, h, st), "\n")
		if len(lines) != h {
			t.Errorf("%dx%d: %d lines", w, h, len(lines))
		}
		for i, l := range lines {
			if lw := lipgloss.Width(l); lw > w {
				t.Errorf("%dx%d: line %d is %d wide: %q", w, h, i, lw, l)
			}
		}
	}
}

func TestGoldenDemoPaneCompare120x16(t *testing.T) {
	p, _, _ := comparePane(t)
	golden.RequireEqual(t, p.View(120, 16, newStyles(colorprofile.TrueColor, true)))
}
