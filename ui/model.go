package ui

import (
	"context"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// syncViewLimit: up to this many locks the view index is rebuilt inside Update (well under a
// millisecond); above it, a command builds it so a million locks never stall the keyboard.
const syncViewLimit = 10_000

// rebuildGap spaces the rebuilds of a large census's view index caused by scan batches.
const rebuildGap = time.Second

// noticeFor is how long the result of an action stays in the footer.
const noticeFor = 15 * time.Second

// notice is the footer message about the last action.
type notice struct {
	text string
	bad  bool
	at   time.Time
}

// Model is the root model: it owns all state; the components are plain structs it drives.
type Model struct {
	ctx   context.Context // ends when the program ends: cancels the commands' IO
	clock func() time.Time
	now   time.Time // the time the screen shows, advanced by ticks

	admin    *actions.Admin
	readOnly bool
	// redact removes the target's passwords (connect.Target.Redact) from every error and
	// warning the console shows: they may quote a connection's settings.
	redact     func(string) string
	stuckAfter time.Duration

	profile colorprofile.Profile
	isDark  bool
	st      styles
	keys    keyMap
	help    help.Model

	width, height int

	scanCh  <-chan scanner.Update
	eventCh <-chan protocol.Event
	// masterCh is a Sentinel target's stream of master switches (nil for other targets).
	masterCh <-chan connect.MasterSwitch
	// focus names the keys on screen to the scanner (nil in tests); focused is what it
	// was told last.
	focus   func(keys []string)
	focused []string

	// The census and its cached, filtered and sorted view.
	locks    lockSet
	view     viewIndex
	query    viewQuery
	queryGen uint64 // bumped on every filter or sort change
	// latestQuery is queryGen for the commands in flight: a build for an older query stops
	// early instead of taking the cores from the new query's.
	latestQuery *atomic.Uint64
	viewGen     uint64 // the query generation of the installed view (a full build's)
	building    bool   // a view build command is in flight
	rebuildDue  bool   // a rebuild is scheduled (rebuildMsg)
	dirty       bool   // the census or query changed since the last build started
	syncLimit   int
	passGen     uint64 // the newest complete scanner pass
	waiters     map[string]int
	fence       fenceJumps  // which locks' fence tokens jumped (fencejump.go)
	history     lockHistory // the recent past of the locks watched closely (history.go)
	// jumpLines and jumpsUnlogged count the fence-jump lines of the pass running, and the
	// jumps past jumpLinesPerPass.
	jumpLines, jumpsUnlogged int
	// contention aggregates the census and the events by key group for the overview
	// (contention.go); groups is its rule.
	contention *contention
	groups     keygroup.Rule

	table    lockTable
	status   statusBar
	filter   filterInput
	detail   detailPane
	overview overviewPane
	events   eventLog
	audit    auditView
	dialog   *confirmDialog
	showHelp bool
	notice   notice
	demo     *demoPane // nil unless Options.Demo is set

	actionSeq uint64 // ids of admin actions
	pending   int    // actions in flight

	// The session: the connection and census shown, replaced by `:context` and `:pattern`.
	command      commandLine
	switchTo     SwitchFunc
	noEvents     bool
	session      uint64             // the session shown; a switch in flight asks for sessionSeq
	sessionSeq   uint64             // the newest session asked for
	endSession   context.CancelFunc // stops the shown session's streams
	closeSession func()             // closes its connection when the console opened it (nil: Run's caller owns it)
}

func newModel(ctx context.Context, o Options, scanCh <-chan scanner.Update, eventCh <-chan protocol.Event) *Model {
	clock := o.Now
	if clock == nil {
		clock = time.Now
	}
	stuck := o.StuckAfter
	if stuck <= 0 {
		stuck = present.DefaultStuckAfter
	}
	readOnly := o.ReadOnly || o.Admin == nil || o.Admin.ReadOnly()
	m := &Model{
		ctx:         ctx,
		clock:       clock,
		now:         clock(),
		admin:       o.Admin,
		readOnly:    readOnly,
		stuckAfter:  stuck,
		profile:     colorprofile.TrueColor,
		isDark:      true,
		keys:        newKeyMap(readOnly),
		help:        help.New(),
		scanCh:      scanCh,
		eventCh:     eventCh,
		locks:       newLockSet(o.Target.Mode == connect.Independent),
		latestQuery: new(atomic.Uint64),
		syncLimit:   syncViewLimit,
		waiters:     map[string]int{},
		history:     newLockHistory(),
		status:      newStatusBar(o.Target, o.TargetLabel, readOnly),
		redact:      o.Target.Redact,
		events:      eventLog{open: true},
		groups:      keygroup.Default,
	}
	if o.Group != nil {
		m.groups = *o.Group
	}
	m.watchContention()
	if o.Admin == nil {
		m.keys.Audit.SetEnabled(false)
	}
	if o.Demo != nil {
		p := newDemoPane(o.Demo, o.Target.Redact)
		p.naive = o.DemoCompare
		m.demo = &p
	}
	m.setStyles()
	m.filter = newFilterInput(m.st)
	m.switchTo, m.noEvents = o.Switch, o.NoEvents
	m.command = newCommandLine(m.st, o.Contexts)
	if o.Switch == nil {
		m.keys.Command.SetEnabled(false)
	}
	return m
}

// setStyles rebuilds the styles after the colour profile or background became known.
func (m *Model) setStyles() {
	m.st = newStyles(m.profile, m.isDark)
	m.help.Styles = m.st.help
	m.filter.input.SetStyles(m.st.input)
	m.command.input.SetStyles(m.st.input)
}

// Init starts the streams and the countdown.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{waitForScan(m.scanCh, m.session), waitForEvent(m.eventCh, m.session), tick(), tea.RequestBackgroundColor,
		waitForSwitch(m.masterCh, m.session), masterCmd(m.ctx, m.status.target, m.session)}
	if m.demo != nil {
		cmds = append(cmds, m.demo.Init())
	}
	return tea.Batch(cmds...)
}

// Update routes every message; it does no IO and nothing slow (see commands.go). Afterwards
// the table's window follows the layout, which banners, notices and panes may have changed.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	m.table.setHeight(m.layout().tableRows, m.view)
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	if snap, ok := msg.(demoSnapshotMsg); ok && m.demo != nil {
		m.logDemoEvents(snap.snap.Events, &m.demo.loggedSeq, "")
		m.logDemoEvents(snap.naive.Events, &m.demo.loggedNaiveSeq, "naive run: ") // --compare
		m.recordSections(snap.at, snap.snap, snap.naive)
	}
	if _, isKey := msg.(tea.KeyPressMsg); m.demo != nil && !isKey {
		// The demo pane's own messages (snapshots, results of its keys).
		if cmd, handled := m.demo.Update(msg); handled {
			return cmd
		}
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		return nil
	case tea.ColorProfileMsg:
		m.profile = msg.Profile
		m.setStyles()
		return nil
	case tea.BackgroundColorMsg:
		m.isDark = msg.IsDark()
		m.setStyles()
		return nil
	case tickMsg:
		m.now = m.clock()
		m.trackOnScreen()
		m.sampleContention()
		return tea.Batch(tick(), m.focusCmd())
	case scanMsg:
		if msg.session != m.session {
			return nil // the stream of a session switched away from: its reader ends here
		}
		return tea.Batch(m.onScan(msg.update), waitForScan(m.scanCh, m.session))
	case scanClosedMsg, eventsClosedMsg, masterClosedMsg:
		return nil
	case masterMsg:
		if msg.session == m.session {
			m.onMaster(msg)
		}
		return nil
	case masterSwitchMsg:
		if msg.session != m.session {
			return nil // a switched-away session's sentinels: their reader ends here
		}
		m.onMasterSwitch(msg.sw)
		return waitForSwitch(m.masterCh, m.session)
	case eventMsg:
		if msg.session != m.session {
			return nil
		}
		m.onEvent(msg.event)
		return waitForEvent(m.eventCh, m.session)
	case viewBuiltMsg:
		return m.onViewBuilt(msg)
	case viewPartialMsg:
		m.onViewPartial(msg)
		return nil
	case rebuildMsg:
		m.rebuildDue = false
		if m.dirty {
			return m.requestView()
		}
		return nil
	case actionDoneMsg:
		return m.onActionDone(msg)
	case declineRecordedMsg:
		m.onDeclineRecorded(msg)
		return nil
	case auditLoadedMsg:
		m.onAuditLoaded(msg)
		return nil
	case valueSizeMsg:
		m.onValueSize(msg)
		return nil
	case togetherMsg:
		m.onTogether(msg)
		return nil
	case sessionMsg:
		return m.onSession(msg)
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case tea.PasteMsg:
		return m.onPaste(msg)
	case tea.MouseWheelMsg:
		m.onWheel(msg)
		return nil
	case tea.MouseClickMsg:
		m.onClick(msg)
		return nil
	}
	return nil
}

// onScan applies one message of the scanner's stream.
func (m *Model) onScan(u scanner.Update) tea.Cmd {
	switch u.Kind {
	case scanner.UpdateBatch:
		m.now = m.clock() // never older than the records: a fresh TTL would show more than it has
		m.markLive()
		m.observeTokens(u.Locks)
		m.recordCensus(u.Locks)
		m.locks.apply(u.Locks, u.Gen)
		return m.requestView()
	case scanner.UpdatePassDone:
		if u.Gen < m.passGen {
			return nil // a pass older than one already complete: stale
		}
		m.passGen = u.Gen
		m.markLive()
		m.status.scanAt, m.status.scanDur, m.status.missing = u.Census.FetchedAt, u.Census.Duration, u.Census.Missing
		for _, w := range u.Census.Warnings {
			m.warn(w)
		}
		// A partial pass (a server missing) proves nothing about the keys it did not see:
		// keep them rather than show fewer locks than there are.
		if len(u.Census.Missing) == 0 {
			m.locks.prune(u.Gen, m.rowGoneAt(u.Census.FetchedAt))
		}
		m.history.prune(m.now)
		m.fence.passDone(u.Gen, m.tokenOf)
		m.jumpPassDone()
		for k := range m.waiters {
			if !m.locks.hasKey(k) {
				delete(m.waiters, k)
			}
		}
		return m.requestView()
	case scanner.UpdateWarning:
		m.warn(u.Warning)
	case scanner.UpdateFollowing:
		m.status.following = u.Following
	case scanner.UpdateClock:
		m.status.heard(u.Addr, u.Clock)
	case scanner.UpdateRetrying:
		m.status.conn, m.status.attempt, m.status.retryIn = connReconnecting, u.Attempt, u.RetryIn
		m.status.connErr = m.redact(u.ErrText())
	case scanner.UpdateError:
		m.status.conn, m.status.attempt, m.status.retryIn = connReconnecting, 0, 0
		m.status.connErr = "scan failed: " + m.redact(u.ErrText())
	}
	return nil
}

// warn counts a scanner warning in the status bar and logs it once in the event log, where
// the operator can read it.
func (m *Model) warn(w string) {
	w = m.redact(w)
	if m.status.warn(w) {
		m.events.add(logEntry{at: m.clock(), kind: kindWarning, text: w})
	}
}

// markLive records that the connection works (again).
func (m *Model) markLive() {
	if m.status.conn == connReconnecting {
		m.setNotice("reconnected", false)
	}
	m.status.conn, m.status.connErr, m.status.attempt, m.status.retryIn = connLive, "", 0, 0
}

// onEvent logs a locklib event and learns waiter counts from it (not of independent servers:
// an event does not say which server's lock of its key it is about).
func (m *Model) onEvent(ev protocol.Event) {
	m.events.add(entryFromEvent(ev))
	m.recordEvent(ev)
	m.contention.observeEvent(ev, m.censusHolder)
	switch {
	case m.locks.byServer:
	case ev.Waiters > 0:
		m.waiters[ev.Key] = int(ev.Waiters)
	case ev.Type == string(locklib.EventReleased) || ev.Type == string(locklib.EventLost):
		delete(m.waiters, ev.Key)
	}
}

// requestView asks for the view index to be rebuilt after a data or query change: inline for
// small censuses, else by a command, one at a time (a change during a build marks the index
// dirty and the build's completion starts the next one).
func (m *Model) requestView() tea.Cmd { return m.requestViewOf(nil) }

// requestViewOf is requestView with a snapshot of the census already taken (nil: none yet).
func (m *Model) requestViewOf(snap []*lockRow) tea.Cmd {
	if m.building || m.rebuildDue {
		m.dirty = true
		return nil
	}
	m.dirty = false
	if snap == nil {
		snap = m.locks.snapshot()
	}
	if len(snap) <= m.syncLimit {
		idx := buildView(snap, m.query, m.viewBuild())
		m.installView(idx, indexOfKey(idx.rows, m.table.selKey))
		m.viewGen = m.queryGen
		return nil
	}
	m.building = true
	return buildViewCmd(snap, m.query, m.queryGen, m.latestQuery, m.viewBuild(), m.table.selKey)
}

// onViewBuilt installs a finished build unless the query changed meanwhile (then it is
// stale: dropped, and the build for the new query starts at once). Census changes that came
// in during the build are picked up by the next build after rebuildGap, so a long scan pass
// of a huge census does not keep a core busy sorting.
func (m *Model) onViewBuilt(msg viewBuiltMsg) tea.Cmd {
	m.building = false
	if msg.gen != m.queryGen {
		return m.requestView()
	}
	at := -1
	if msg.selKey == m.table.selKey {
		at = msg.selIndex
	}
	m.installView(msg.index, at)
	m.viewGen = msg.gen
	if !m.dirty {
		return nil
	}
	m.rebuildDue = true
	return tea.Tick(rebuildGap, func(time.Time) tea.Msg { return rebuildMsg{} })
}

func (m *Model) installView(idx viewIndex, selAt int) {
	m.view = idx
	m.table.follow(selAt, m.view)
}

// onViewPartial shows both ends of a new order until its full build lands, unless the
// query changed again or the full build landed first. The selected lock stays selected: on
// its row when the partial view has it, else on the first row still being sorted until the
// full build places it.
func (m *Model) onViewPartial(msg viewPartialMsg) {
	if msg.gen != m.queryGen || m.viewGen == msg.gen {
		return
	}
	at := msg.index.indexOf(m.table.selKey)
	if at < 0 && m.table.selKey != "" {
		at = len(msg.index.rows)
	}
	m.installView(msg.index, at)
}

// partialPages is how many pages a partial view ranks at each end: paging on from the top or
// the bottom stays on ranked rows for a while.
const partialPages = 4

// setQuery applies a filter or sort change. On a large census the rows of the new order come
// in two steps: its first and last pages from one pass over the census, then the full index.
func (m *Model) setQuery(q viewQuery, toTop bool) tea.Cmd {
	m.query = q
	m.queryGen++
	m.latestQuery.Store(m.queryGen)
	if toTop {
		m.table.cursor, m.table.offset, m.table.selKey = 0, 0, ""
	}
	m.rebuildDue = false // the user waits for this one: no spacing
	if m.locks.len() <= m.syncLimit {
		return m.requestView()
	}
	snap := m.locks.snapshot() // for both: the full build starts when the partial view is out
	partial := partialViewCmd(snap, q, m.queryGen, m.latestQuery, m.viewBuild(), partialPages*max(m.table.height, 1))
	return tea.Sequence(partial, m.requestViewOf(snap))
}

// viewBuild is what a view build needs now: the servers' clocks as last heard, the set's
// identity of a row, and the overview's groups.
func (m *Model) viewBuild() viewBuild {
	return viewBuild{now: m.clock(), clocks: m.status.clocks, stuckAfter: m.stuckAfter, byServer: m.locks.byServer,
		groupOf: m.contention.groupOf}
}

// selected is the newest record of the selected lock, or nil (also when it left the census
// and the view index does not know yet).
func (m *Model) selected() *scanner.Lock {
	if m.table.selKey == "" {
		return nil
	}
	return m.locks.get(m.table.selKey)
}

func (m *Model) setNotice(text string, bad bool) {
	m.notice = notice{text: text, bad: bad, at: m.clock()}
}
