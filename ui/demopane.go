package ui

import (
	"errors"
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
	snap  demo.Snapshot
	naive demo.Snapshot // --compare's second run (zero without one)
	tick  bool
	// at is when the snapshot was asked for: what it shows held then or a moment later
	// (zero: when it arrives). The timeline dates its workers' sections with it.
	at time.Time
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
	ctrl      DemoController
	naive     DemoController // --compare: the naive lock's run, shown right of ctrl's; nil without
	keys      demoKeyMap
	snap      demo.Snapshot
	naiveSnap demo.Snapshot
	loaded    bool
	selected  int    // id of the selected worker, 0 before the first snapshot
	notice    string // why the last key was refused, until the next key succeeds
	added     int    // id of the worker the last key added (confirmed under the table), 0 when none
	redact    func(string) string

	loggedSeq      uint64 // Seq of the last demo event added to the console's event log
	loggedNaiveSeq uint64 // the same for --compare's naive run
}

// newDemoPane drives ctrl; redact removes the target's passwords from the errors it shows.
func newDemoPane(ctrl DemoController, redact func(string) string) demoPane {
	return demoPane{ctrl: ctrl, keys: newDemoKeyMap(), redact: redact}
}

// Init starts the refresh loop; call it once.
func (p *demoPane) Init() tea.Cmd { return p.snapshot(true, 0) }

// snapshot takes a snapshot after delay (0: at once).
func (p *demoPane) snapshot(tick bool, delay time.Duration) tea.Cmd {
	ctrl, naive := p.ctrl, p.naive
	take := func() tea.Msg {
		at := time.Now()
		msg := demoSnapshotMsg{snap: ctrl.Snapshot(), tick: tick, at: at}
		if naive != nil {
			msg.naive = naive.Snapshot()
		}
		return msg
	}
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
		p.snap, p.naiveSnap, p.loaded = msg.snap, msg.naive, true
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
		ctrls := p.controllers()
		return func() tea.Msg {
			id, err := ctrls[0].AddWorker()
			for _, c := range ctrls[1:] {
				_, e := c.AddWorker()
				err = errors.Join(err, e)
			}
			return demoActionMsg{err: err, added: id}
		}, true
	}
	w, ok := p.selectedWorker()
	if !ok {
		return nil, key.Matches(msg, p.keys.PauseResume, p.keys.Crash)
	}
	ctrls, id := p.controllers(), w.ID
	// Under --compare the fault goes to the same worker of both runs, so that both get it.
	each := func(f func(c DemoController) error) tea.Cmd {
		return func() tea.Msg {
			var err error
			for _, c := range ctrls {
				err = errors.Join(err, f(c))
			}
			return demoActionMsg{err: err}
		}
	}
	switch {
	case key.Matches(msg, p.keys.PauseResume):
		if w.State == demo.Paused {
			return each(func(c DemoController) error { return c.ResumeWorker(id) }), true
		}
		return each(func(c DemoController) error { return c.PauseWorker(id) }), true
	case key.Matches(msg, p.keys.Crash):
		return each(func(c DemoController) error { return c.CrashWorker(id) }), true
	}
	return nil, false
}

// controllers are the runs the keys act on: the demo's, and --compare's naive one.
func (p *demoPane) controllers() []DemoController {
	if p.naive == nil {
		return []DemoController{p.ctrl}
	}
	return []DemoController{p.ctrl, p.naive}
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

func (p *demoPane) selectedIndex() int { return workerIndex(p.snap.Workers, p.selected) }

// workerIndex is the position of worker id in workers, -1 when it is not there.
func workerIndex(workers []demo.WorkerSnapshot, id int) int {
	for i, w := range workers {
		if w.ID == id {
			return i
		}
	}
	return -1
}

// worker is the snapshot's worker id.
func (p demoPane) worker(id int) (demo.WorkerSnapshot, bool) {
	if i := workerIndex(p.snap.Workers, id); i >= 0 {
		return p.snap.Workers[i], true
	}
	return demo.WorkerSnapshot{}, false
}

func (p *demoPane) selectedWorker() (demo.WorkerSnapshot, bool) { return p.worker(p.selected) }

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
	{"RESOURCE", 20, false, func(w demo.WorkerSnapshot) string {
		if w.Mode != "" { // rw-pool: the lease's mode, by its initial (read, write, permit)
			return w.Resource + " (" + w.Mode[:1] + ")"
		}
		return w.Resource
	}},
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
	if p.naive != nil {
		return p.compareView(width, height, st)
	}
	s := p.snap
	// The checker's counters come first: they are the proof, and survive any width.
	parts := append([]string{st.paneTitle.Render("demo")}, counterParts(s, false, st)...)
	parts = append(parts, "phase "+st.statusVal.Render(p.phaseText()), st.dim.Render(s.Server),
		"ttl "+present.Duration(s.TTL), "protection "+s.Protection.String(), "up "+present.Duration(s.Elapsed))
	top := flow(width, parts...)

	var bottom []string
	if ev, ok := lastEvent(s, st); ok {
		bottom = append(bottom, ev)
	}
	bottom = append(bottom, p.footer(st)...)

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
	lines = append(lines, p.workerTable(s.Workers, width, tableRows, st)...)
	lines = append(lines, bottom...)
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

// lastEvent is the run's last event in one line.
func lastEvent(s demo.Snapshot, st styles) (string, bool) {
	if len(s.Events) == 0 {
		return "", false
	}
	ev := s.Events[len(s.Events)-1]
	return st.dim.Render(ev.At.Format("15:04:05")+" ") + present.SafeText(ev.Text, 0), true // may quote a server's error
}

// footer is the result of the last key and the keys.
func (p demoPane) footer(st styles) []string {
	var lines []string
	if p.notice != "" {
		lines = append(lines, st.noticeBad.Render(present.SafeText(p.notice, 0))) // the error may quote a server
	}
	if w, ok := p.worker(p.added); ok {
		lines = append(lines, st.notice.Render("added "+w.Name+" (selected)"))
	}
	return append(lines, st.dim.Render(p.keyHint()))
}

// compareSeparator stands between the two runs' columns.
const compareSeparator = " │ "

// compareView draws `demo --compare`: what both runs share on top (phase, server, ttl, time),
// then each run in a column of its own, locklib's left and the naive lock's right, its counters
// (all of them, so that they line up against each other), workers and last event; then the
// keys, which act on both. Short heights drop the events, then the footer, as View does.
func (p demoPane) compareView(width, height int, st styles) string {
	s := p.snap
	top := flow(width, st.paneTitle.Render("demo --compare"), "phase "+st.statusVal.Render(p.phaseText()),
		st.dim.Render(s.Server), "ttl "+present.Duration(s.TTL), "up "+present.Duration(s.Elapsed))
	if len(top) >= height {
		return fitBlock(strings.Join(top[:height], "\n"), width, height)
	}
	lw := max(0, (width-lipgloss.Width(compareSeparator))/2)
	rw := max(0, width-lipgloss.Width(compareSeparator)-lw)
	heads := [2][]string{p.compareHead(p.snap, lw, st), p.compareHead(p.naiveSnap, rw, st)}
	headRows := max(len(heads[0]), len(heads[1]))
	bottom := p.footer(st)
	tableRows := height - len(top) - headRows - len(bottom)
	events := tableRows-1 >= 2
	if events {
		tableRows--
	}
	if tableRows < 2 {
		bottom = bottom[:max(0, len(bottom)-(2-tableRows))]
		tableRows = height - len(top) - headRows - len(bottom)
	}
	column := func(i int, snap demo.Snapshot, w int) []string {
		col := append([]string(nil), heads[i]...)
		for len(col) < headRows {
			col = append(col, "")
		}
		table := p.workerTable(snap.Workers, w, tableRows, st)
		for len(table) < tableRows {
			table = append(table, "")
		}
		col = append(col, table...)
		if ev, ok := lastEvent(snap, st); ok && events {
			col = append(col, ev)
		} else if events {
			col = append(col, "")
		}
		return col
	}
	left, right := column(0, p.snap, lw), column(1, p.naiveSnap, rw)
	lines := top
	for i := range left {
		lines = append(lines, padLine(left[i], lw)+st.dim.Render(compareSeparator)+fitLine(right[i], rw))
	}
	lines = append(lines, bottom...)
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

// compareHead is one run's title, protection and counters, flowed into width.
func (p demoPane) compareHead(s demo.Snapshot, width int, st styles) []string {
	parts := []string{st.paneTitle.Render(string(s.Lock)), "protection " + s.Protection.String()}
	return flow(width, append(parts, counterParts(s, true, st)...)...)
}

// padLine cuts or pads a styled line to exactly width cells.
func padLine(s string, width int) string {
	s = fitLine(s, width)
	return s + strings.Repeat(" ", max(0, width-lipgloss.Width(s)))
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

// counterParts are the checker's figures of s, the overlap count styled as the verdict; all
// shows stale accepted and no ttl even at 0 (--compare's columns), else only once they happen.
func counterParts(s demo.Snapshot, all bool, st styles) []string {
	k := s.Counters
	overlaps := st.notice.Render("overlaps 0")
	if k.Unsafe() {
		overlaps = st.danger.Render("overlaps " + strconv.FormatInt(k.Overlaps, 10) + " UNSAFE")
	}
	parts := []string{overlaps}
	// Shown once they happen (a naive lock, a broken fence): the figures that make a run unsafe
	// or leave a lock held forever.
	if k.StaleAccepted > 0 {
		parts = append(parts, st.danger.Render("stale accepted "+strconv.FormatInt(k.StaleAccepted, 10)))
	} else if all {
		parts = append(parts, "stale accepted 0")
	}
	if k.TokenRegressions > 0 { // unsafe with overlaps 0: the reason must show
		parts = append(parts, st.danger.Render("token regressions "+strconv.FormatInt(k.TokenRegressions, 10)))
	}
	if k.LeaseViolations > 0 { // the same: Redis let conflicting leases overlap
		parts = append(parts, st.danger.Render("lease violations "+strconv.FormatInt(k.LeaseViolations, 10)))
	}
	if k.NoTTLLocks > 0 {
		parts = append(parts, st.warning.Render("no ttl "+strconv.FormatInt(k.NoTTLLocks, 10)))
	} else if all {
		parts = append(parts, "no ttl 0")
	}
	parts = append(parts,
		"sections "+strconv.FormatInt(k.Sections, 10),
		"stale rejected "+strconv.FormatInt(k.StaleRejected, 10),
		"expired after crash "+strconv.FormatInt(k.ExpiredAfterCrash, 10),
		"wait p50 "+demoDuration(s.WaitP50)+" p99 "+demoDuration(s.WaitP99),
	)
	if s.Permits > 0 { // rw-pool: the pool now, the readers' and the pool's peaks, leases run out
		parts = append(parts, fmt.Sprintf("pool %d/%d in use", s.PoolInUse, s.Permits),
			fmt.Sprintf("peak readers %d permits %d", k.MaxReaders, k.MaxPermits),
			"leases lost "+strconv.FormatInt(k.LeasesLost, 10))
	}
	if i := s.InstanceDown; i >= 0 && i < len(s.Addrs) {
		parts = append(parts, st.warning.Render("instance "+s.Addrs[i]+" down"))
	}
	parts = append(parts, masterParts(s, st)...)
	return parts
}

// workerTable is a header and up to rows-1 rows of workers around the selected one.
func (p demoPane) workerTable(workers []demo.WorkerSnapshot, width, rows int, st styles) []string {
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

	visible := rows - 1
	first := 0
	if sel := workerIndex(workers, p.selected); sel >= visible {
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
