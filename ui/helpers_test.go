package ui

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
)

// The screens show local times: the golden files must not depend on the machine's zone.
func init() { time.Local = time.UTC }

// t0 is the frozen "now" of the tests.
var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

var testTarget = connect.Target{Mode: connect.Standalone, Addrs: []string{"127.0.0.1:6379"}}

type modelOpt func(*Options)

func readOnly(o *Options) { o.ReadOnly = true }

// newTestModel is a model with a frozen clock at width x height, with an Admin whose target
// has no servers (actions are started but never run in these tests), loaded with fixture().
func newTestModel(t testing.TB, width, height int, opts ...modelOpt) (*Model, *fakeClock) {
	t.Helper()
	return newModelOf(t, width, height, fixture(), opts...)
}

// newModelOf is newTestModel loaded with locks.
func newModelOf(t testing.TB, width, height int, locks []scanner.Lock, opts ...modelOpt) (*Model, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: t0}
	o := Options{
		Target: testTarget,
		Admin:  actions.New(testTarget, actions.Options{Operator: "tester"}),
		Now:    clk.now,
	}
	for _, f := range opts {
		f(&o)
	}
	if o.ReadOnly {
		o.Admin = actions.New(testTarget, actions.Options{Operator: "tester", ReadOnly: true})
	}
	m := newModel(context.Background(), o, nil, nil)
	m.Update(tea.ColorProfileMsg{Profile: colorprofile.TrueColor})
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: locks})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1, Census: scanner.Census{FetchedAt: t0.Add(-40 * time.Millisecond), Duration: 38 * time.Millisecond}})
	return m, clk
}

// fixture is a census with one lock of each interesting kind, read at t0.
func fixture() []scanner.Lock {
	return []scanner.Lock{
		{
			Key: "lock:order:1001", Format: scanner.FormatLockscope, Type: "string",
			Node: "api-7", Trace: "req-42", AcquiredAt: t0.Add(-90 * time.Second),
			TTL: 25 * time.Second, FetchedAt: t0, Fence: 1042, HasFence: true, Waiters: 2, HasWaiters: true,
			Value: "api-7:req-42:1796029110000:0123456789abcdef", Addr: "127.0.0.1:6379",
		},
		{
			Key: "lock:cart:7", Format: scanner.FormatLockscope, Type: "string",
			Node: "worker-3", AcquiredAt: t0.Add(-12 * time.Minute), NoExpiry: true, FetchedAt: t0, Reentry: 2,
			Value: "worker-3:-:1796028480000:fedcba9876543210:2", Addr: "127.0.0.1:6379",
		},
		{
			Key: "lock:pay:55", Format: scanner.FormatRedsync, Type: "string",
			TTL: 3 * time.Second, FetchedAt: t0, Value: "Zm9vYmFyYmF6cXV4MTIzNA==", Addr: "127.0.0.1:6379",
		},
		{
			Key: "lock:inv:9", Format: scanner.FormatRedisson, Type: "hash",
			TTL: 40 * time.Second, FetchedAt: t0, Reentry: 1,
			Owners: []scanner.Owner{{ID: "8f0c2a56-4b1e-4c7e-9d3a-1b2c3d4e5f60:1", Count: 1}},
			Value:  "8f0c2a56-4b1e-4c7e-9d3a-1b2c3d4e5f60:1=1",
		},
		{
			Key: "lock:queue", Format: scanner.FormatNotALock, Type: "list", NoExpiry: true, FetchedAt: t0,
		},
	}
}

// feed sends one scanner update and runs what it returns synchronously (view builds).
func feed(m *Model, u scanner.Update) {
	_, cmd := m.Update(scanMsg{update: u})
	runSync(m, cmd)
}

// runSync executes the commands that finish by themselves (view builds, the search for keys
// taken together) and feeds their
// messages back; blocking ones (stream readers, ticks) are not run.
func runSync(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if cmds, ok := subCmds(msg); ok {
		for _, c := range cmds {
			runSync(m, c)
		}
		return
	}
	switch msg.(type) {
	case viewBuiltMsg, viewPartialMsg, togetherMsg:
		_, next := m.Update(msg)
		runSync(m, next)
	}
}

// subCmds is the commands of a tea.Batch or a tea.Sequence (whose message type is not
// exported: both are slices of commands), in order.
func subCmds(msg tea.Msg) ([]tea.Cmd, bool) {
	v := reflect.ValueOf(msg)
	if !v.IsValid() || v.Kind() != reflect.Slice || v.Type().Elem() != reflect.TypeFor[tea.Cmd]() {
		return nil, false
	}
	cmds := make([]tea.Cmd, v.Len())
	for i := range cmds {
		cmds[i] = v.Index(i).Interface().(tea.Cmd)
	}
	return cmds, true
}

// typeKeys sends keys: names like "enter", "tab", "shift+tab", "esc", "up", "down", "space",
// "ctrl+c", or literal text typed one character at a time.
func typeKeys(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		for _, msg := range keyMsgs(k) {
			_, last = m.Update(msg)
		}
	}
	return last
}

func keyMsgs(k string) []tea.KeyPressMsg {
	named := map[string]tea.KeyPressMsg{
		"enter":     {Code: tea.KeyEnter},
		"tab":       {Code: tea.KeyTab},
		"shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"esc":       {Code: tea.KeyEscape},
		"up":        {Code: tea.KeyUp},
		"down":      {Code: tea.KeyDown},
		"left":      {Code: tea.KeyLeft},
		"right":     {Code: tea.KeyRight},
		"backspace": {Code: tea.KeyBackspace},
		"space":     {Code: tea.KeySpace, Text: " "},
		"ctrl+c":    {Code: 'c', Mod: tea.ModCtrl},
	}
	if msg, ok := named[k]; ok {
		return []tea.KeyPressMsg{msg}
	}
	var out []tea.KeyPressMsg
	for _, r := range k {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}

// visibleKeys lists the keys of the view index in order.
func visibleKeys(m *Model) []string {
	return slices.Clone(m.view.rows)
}

// selectKey moves the cursor to key.
func selectKey(t testing.TB, m *Model, key string) {
	t.Helper()
	i := indexOfKey(m.view.rows, key)
	if i < 0 {
		t.Fatalf("%s not in view %v", key, visibleKeys(m))
	}
	m.table.moveTo(i, m.view)
}

// screen is the rendered screen without escape sequences.
func screen(m *Model) string { return ansi.Strip(m.View().Content) }

// notJumped is the jump test of a census without fence-token jumps.
func notJumped(*scanner.Lock) bool { return false }

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func mustContain(t testing.TB, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Fatalf("missing %q in:\n%s", want, s)
	}
}

func mustNotContain(t testing.TB, s, unwanted string) {
	t.Helper()
	if strings.Contains(s, unwanted) {
		t.Fatalf("unexpected %q in:\n%s", unwanted, s)
	}
}
