package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/present"
)

// DemoController is what the demo pane drives: *demo.Controller. Every method is cheap and
// safe to call from any goroutine; the pane calls them only inside commands.
type DemoController interface {
	Snapshot() demo.Snapshot
	PauseWorker(id int) error
	ResumeWorker(id int) error
	CrashWorker(id int) error
	AddWorker() (int, error)
}

// demoRefresh is how often the pane takes a snapshot of the demo.
const demoRefresh = 200 * time.Millisecond

// demoKeyMap is the demo pane's keys; none of them is used by the lock table.
type demoKeyMap struct {
	Prev, Next, PauseResume, Crash, Add key.Binding
}

func newDemoKeyMap() demoKeyMap {
	return demoKeyMap{
		Prev:        key.NewBinding(key.WithKeys("["), key.WithHelp("[", "previous worker")),
		Next:        key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "next worker")),
		PauseResume: key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume worker")),
		Crash:       key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "crash worker")),
		Add:         key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "add worker")),
	}
}

// Bindings lists the keys for the help view, in display order.
func (k demoKeyMap) Bindings() []key.Binding {
	return []key.Binding{k.Prev, k.Next, k.PauseResume, k.Crash, k.Add}
}

// demoSnapshotMsg carries a snapshot; tick says it came from the refresh loop (which the
// pane then re-arms), not from a one-off refresh after an action.
type demoSnapshotMsg struct {
	snap demo.Snapshot
	tick bool
}

// demoActionMsg is the result of a key's Controller call; added is the id of a worker added.
type demoActionMsg struct {
	err   error
	added int
}

// demoPane shows the contention demo: its workers (state, holds, waits, stale writes) and the
// checker's counters, and maps its keys to Controller calls. The root model holds one when the
// console runs a demo, feeds it every message (Update) and draws it with View.
type demoPane struct {
	ctrl     DemoController
	keys     demoKeyMap
	snap     demo.Snapshot
	loaded   bool
	selected int    // id of the selected worker, 0 before the first snapshot
	notice   string // why the last key was refused, until the next key succeeds
	added    int    // id of the worker the last key added (confirmed under the table), 0 when none
	redact   func(string) string

	loggedSeq uint64 // Seq of the last demo event added to the console's event log
}

// newDemoPane drives ctrl; redact removes the target's passwords from the errors it shows.
func newDemoPane(ctrl DemoController, redact func(string) string) demoPane {
	return demoPane{ctrl: ctrl, keys: newDemoKeyMap(), redact: redact}
}

// Init starts the refresh loop; call it once.
func (p *demoPane) Init() tea.Cmd { return p.snapshot(true, 0) }

// snapshot takes a snapshot after delay (0: at once).
func (p *demoPane) snapshot(tick bool, delay time.Duration) tea.Cmd {
	ctrl := p.ctrl
	take := func() tea.Msg { return demoSnapshotMsg{snap: ctrl.Snapshot(), tick: tick} }
	if delay == 0 {
		return take
	}
	return tea.Tick(delay, func(time.Time) tea.Msg { return take() })
}

// Update handles the pane's own messages and its keys. handled is false for anything else,
// which the root model then handles as usual.
func (p *demoPane) Update(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	switch msg := msg.(type) {
	case demoSnapshotMsg:
		p.snap, p.loaded = msg.snap, true
		p.keepSelection()
		if msg.tick && !msg.snap.Stopped {
			return p.snapshot(true, demoRefresh), true
		}
		return nil, true
	case demoActionMsg:
		// A success shows up in the demo's event line; a refusal needs a notice, and a worker
		// added is confirmed and selected, so that its row is on screen.
		p.notice = ""
		switch {
		case msg.err != nil:
			p.notice = p.redact(msg.err.Error())
		case msg.added > 0:
			p.selected, p.added = msg.added, msg.added
		}
		return p.snapshot(false, 0), true
	case tea.KeyPressMsg:
		return p.handleKey(msg)
	}
	return nil, false
}

func (p *demoPane) handleKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	p.added = 0
	switch {
	case key.Matches(msg, p.keys.Prev):
		p.moveSelection(-1)
		return nil, true
	case key.Matches(msg, p.keys.Next):
		p.moveSelection(1)
		return nil, true
	case key.Matches(msg, p.keys.Add):
		ctrl := p.ctrl
		return func() tea.Msg {
			id, err := ctrl.AddWorker()
			return demoActionMsg{err: err, added: id}
		}, true
	}
	w, ok := p.selectedWorker()
	if !ok {
		return nil, key.Matches(msg, p.keys.PauseResume, p.keys.Crash)
	}
	ctrl, id := p.ctrl, w.ID
	switch {
	case key.Matches(msg, p.keys.PauseResume):
		if w.State == demo.Paused {
			return func() tea.Msg { return demoActionMsg{err: ctrl.ResumeWorker(id)} }, true
		}
		return func() tea.Msg { return demoActionMsg{err: ctrl.PauseWorker(id)} }, true
	case key.Matches(msg, p.keys.Crash):
		return func() tea.Msg { return demoActionMsg{err: ctrl.CrashWorker(id)} }, true
	}
	return nil, false
}

// keepSelection keeps the selected id valid: the first worker when none is selected.
func (p *demoPane) keepSelection() {
	if len(p.snap.Workers) == 0 {
		p.selected = 0
		return
	}
	if p.selectedIndex() < 0 {
		p.selected = p.snap.Workers[0].ID
	}
}

func (p *demoPane) moveSelection(delta int) {
	n := len(p.snap.Workers)
	if n == 0 {
		return
	}
	i := (max(p.selectedIndex(), 0) + delta + n) % n
	p.selected = p.snap.Workers[i].ID
}

func (p *demoPane) selectedIndex() int {
	for i, w := range p.snap.Workers {
		if w.ID == p.selected {
			return i
		}
	}
	return -1
}

// worker is the snapshot's worker id.
func (p demoPane) worker(id int) (demo.WorkerSnapshot, bool) {
	for _, w := range p.snap.Workers {
		if w.ID == id {
			return w, true
		}
	}
	return demo.WorkerSnapshot{}, false
}

func (p *demoPane) selectedWorker() (demo.WorkerSnapshot, bool) {
	if i := p.selectedIndex(); i >= 0 {
		return p.snap.Workers[i], true
	}
	return demo.WorkerSnapshot{}, false
}

// demoColumn is one column of the worker table; columns are dropped right to left when the
// pane is too narrow for them.
type demoColumn struct {
	title string
	width int
	right bool
	value func(w demo.WorkerSnapshot) string
}

var demoColumns = []demoColumn{
	{"WORKER", 9, false, func(w demo.WorkerSnapshot) string { return w.Name }},
	{"STATE", 8, false, func(w demo.WorkerSnapshot) string { return string(w.State) }},
	{"HOLDS", 6, true, func(w demo.WorkerSnapshot) string { return strconv.FormatInt(w.Holds, 10) }},
	{"STALE", 6, true, func(w demo.WorkerSnapshot) string { return strconv.FormatInt(w.StaleRejected, 10) }},
	{"WAIT50", 7, true, func(w demo.WorkerSnapshot) string { return demoDuration(w.WaitP50) }},
	{"WAIT99", 7, true, func(w demo.WorkerSnapshot) string { return demoDuration(w.WaitP99) }},
	{"RESOURCE", 20, false, func(w demo.WorkerSnapshot) string { return w.Resource }},
	{"TOKEN", 17, true, func(w demo.WorkerSnapshot) string {
		if w.Token == 0 {
			return present.Unknown
		}
		return strconv.FormatInt(w.Token, 10)
	}},
}

func demoDuration(d time.Duration) string {
	if d == 0 {
		return present.Unknown
	}
	return present.Duration(d)
}

// View draws the pane in exactly width x height cells (content only; the root frames it).
// From top to bottom, dropping the later parts first when height is short: the checker's
// counters and the run's facts (flowed into as many lines as the width needs), the worker
// table (scrolled to the selection), the last demo event and the result of the last key.
func (p demoPane) View(width, height int, st styles) string {
	if width <= 0 || height <= 0 {
		return ""
	}
	if !p.loaded {
		return fitBlock(st.dim.Render("starting the demo…"), width, height)
	}
	s := p.snap
	// The checker's counters come first: they are the proof, and survive any width.
	parts := append([]string{st.paneTitle.Render("demo")}, p.counterParts(st)...)
	parts = append(parts, "phase "+st.statusVal.Render(p.phaseText()), st.dim.Render(s.Server),
		"ttl "+present.Duration(s.TTL), "protection "+s.Protection.String(), "up "+present.Duration(s.Elapsed))
	top := flow(width, parts...)

	var bottom []string
	if len(s.Events) > 0 {
		ev := s.Events[len(s.Events)-1]
		bottom = append(bottom, st.dim.Render(ev.At.Format("15:04:05")+" ")+present.SafeText(ev.Text, 0)) // may quote a server's error
	}
	if p.notice != "" {
		bottom = append(bottom, st.noticeBad.Render(present.SafeText(p.notice, 0))) // the error may quote a server
	}
	if w, ok := p.worker(p.added); ok {
		bottom = append(bottom, st.notice.Render("added "+w.Name+" (selected)"))
	}
	bottom = append(bottom, st.dim.Render(p.keyHint()))

	// Then as many worker rows as fit, then the footer lines.
	lines := top
	if len(lines) >= height {
		return fitBlock(strings.Join(lines[:height], "\n"), width, height)
	}
	tableRows := height - len(lines) - len(bottom)
	if tableRows < 2 { // no room for a header and a row: keep the table, drop the footer lines
		bottom = bottom[:max(0, len(bottom)-(2-tableRows))]
		tableRows = height - len(lines) - len(bottom)
	}
	lines = append(lines, p.workerTable(width, tableRows, st)...)
	lines = append(lines, bottom...)
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

// keyHint is the pane's keys in one line (the root's help lists them too).
func (p demoPane) keyHint() string {
	var parts []string
	for _, b := range p.keys.Bindings() {
		parts = append(parts, b.Help().Key+" "+b.Help().Desc)
	}
	return strings.Join(parts, " · ")
}

func (p demoPane) phaseText() string {
	s := p.snap
	if s.Phase == s.Scenario {
		return string(s.Phase)
	}
	return fmt.Sprintf("%s (%s)", s.Phase, s.Scenario)
}

// counterParts are the checker's figures, the overlap count styled as the verdict.
func (p demoPane) counterParts(st styles) []string {
	k := p.snap.Counters
	overlaps := st.notice.Render("overlaps 0")
	if k.Unsafe() {
		overlaps = st.danger.Render("overlaps " + strconv.FormatInt(k.Overlaps, 10) + " UNSAFE")
	}
	parts := []string{overlaps}
	// Shown once they happen (a naive lock, a broken fence): the figures that make a run unsafe
	// or leave a lock held forever.
	if k.StaleAccepted > 0 {
		parts = append(parts, st.danger.Render("stale accepted "+strconv.FormatInt(k.StaleAccepted, 10)))
	}
	if k.NoTTLLocks > 0 {
		parts = append(parts, st.warning.Render("no ttl "+strconv.FormatInt(k.NoTTLLocks, 10)))
	}
	parts = append(parts,
		"sections "+strconv.FormatInt(k.Sections, 10),
		"stale rejected "+strconv.FormatInt(k.StaleRejected, 10),
		"expired after crash "+strconv.FormatInt(k.ExpiredAfterCrash, 10),
		"wait p50 "+demoDuration(p.snap.WaitP50)+" p99 "+demoDuration(p.snap.WaitP99),
	)
	if i := p.snap.InstanceDown; i >= 0 && i < len(p.snap.Addrs) {
		parts = append(parts, st.warning.Render("instance "+p.snap.Addrs[i]+" down"))
	}
	parts = append(parts, p.masterParts(st)...)
	return parts
}

// workerTable is a header and up to rows-1 worker rows around the selected one.
func (p demoPane) workerTable(width, rows int, st styles) []string {
	if rows <= 0 {
		return nil
	}
	// The columns that fit, one space between them.
	var cols []demoColumn
	used := 0
	for _, c := range demoColumns {
		if used+c.width > width && len(cols) > 0 {
			break
		}
		cols = append(cols, c)
		used += c.width + 1
	}
	render := func(values func(c demoColumn) string) string {
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(' ')
			}
			if c.right {
				b.WriteString(cellRight(values(c), c.width))
			} else {
				b.WriteString(cell(values(c), c.width))
			}
		}
		return b.String()
	}
	lines := []string{st.header.Render(render(func(c demoColumn) string { return c.title }))}

	workers := p.snap.Workers
	visible := rows - 1
	first := 0
	if sel := p.selectedIndex(); sel >= visible {
		first = sel - visible + 1
	}
	for i := first; i < len(workers) && i < first+visible; i++ {
		w := workers[i]
		row := render(func(c demoColumn) string { return c.value(w) })
		if w.ID == p.selected {
			lines = append(lines, st.selected.Render(row))
			continue
		}
		lines = append(lines, st.demoState(string(w.State)).Render(row))
	}
	return lines
}

// flow joins parts with two spaces into as few lines of width cells as it can; a part wider
// than a line gets a line of its own (cut by the caller's fitBlock).
func flow(width int, parts ...string) []string {
	var lines []string
	cur := ""
	for _, part := range parts {
		switch {
		case cur == "":
			cur = part
		case lipgloss.Width(cur)+2+lipgloss.Width(part) <= width:
			cur += "  " + part
		default:
			lines = append(lines, cur)
			cur = part
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
