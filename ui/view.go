package ui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/present"
)

// Layout limits.
const (
	eventPaneMinBody = 16 // body rows needed before the event log gets a share
	eventPaneMaxRows = 10
	demoPaneMinBody  = 10 // body rows needed before the demo pane gets a share
	demoPaneMinRows  = 5
	demoPaneMaxRows  = 16
	helpMinHeight    = 8
	tableMinRows     = 5 // the table keeps this many data rows when it lends rows out
	tableSlack       = 2 // empty rows kept under a short table, so a new lock has room
)

// layoutInfo is where everything goes at the current size. View draws from it and the mouse
// handler maps clicks with it, so both always agree.
type layoutInfo struct {
	bannerRows int
	tableTop   int  // screen row of the table header
	tableShown bool // false when the detail view or audit view has the body
	tableWidth int
	tableRows  int // data rows visible
	bodyRows   int // rows of the table/detail/audit area, header included
	eventRows  int // rows of the event-log pane, border included; 0 when hidden
	demoRows   int // rows of the demo pane, border included; 0 without a demo
	filterLine bool
	noticeLine bool
	helpLine   bool
}

func (m *Model) layout() layoutInfo {
	w, h := m.width, m.height
	var l layoutInfo
	if m.status.banner(w, m.st) != "" {
		l.bannerRows = 1
	}
	top := 1 + l.bannerRows
	l.filterLine = m.filter.active || m.filter.value() != "" || m.command.active
	l.noticeLine = m.noticeVisible()
	l.helpLine = h >= helpMinHeight
	footer := func() int { return btoi(l.filterLine) + btoi(l.noticeLine) + btoi(l.helpLine) }
	// On a very short screen the body keeps at least 3 rows: drop help, then the notice.
	if h-top-footer() < 3 {
		l.helpLine = false
	}
	if h-top-footer() < 3 {
		l.noticeLine = false
	}
	body := max(h-top-footer(), 0)
	// The detail and audit views take the whole body: every field of a lock has the width.
	fullBody := m.audit.open || m.detail.open || m.overview.open
	if m.demo != nil && !fullBody && body >= demoPaneMinBody {
		l.demoRows = min(max(body*2/5, demoPaneMinRows), demoPaneMaxRows)
		body -= l.demoRows
	}
	if m.events.open && !fullBody && body >= eventPaneMinBody {
		l.eventRows = min(eventPaneMaxRows, body/3)
		body -= l.eventRows
	}
	l.bodyRows = body
	l.tableTop = top
	l.tableWidth = w
	l.tableShown = !fullBody
	if l.tableShown {
		l.tableRows = max(body-1, 0)
		// Rows the table does not need (a short census) go to the event log's history.
		if need := max(m.view.len()+tableSlack, tableMinRows); l.eventRows > 0 && l.tableRows > need {
			grow := min(l.tableRows-need, 2*eventPaneMaxRows-l.eventRows)
			l.eventRows += grow
			l.bodyRows -= grow
			l.tableRows -= grow
		}
	}
	return l
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *Model) noticeVisible() bool {
	return m.pending > 0 || m.notice.text != "" && m.now.Sub(m.notice.at) < noticeFor
}

// View renders the screen. It reads state only.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "lockscope"
	return v
}

func (m *Model) render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	lay := m.layout()
	st := m.st
	parts := []string{m.status.view(w, m.now, m.view.counts, m.view.len(), !m.query.filter.empty(), st)}
	if lay.bannerRows > 0 {
		parts = append(parts, m.status.banner(w, st))
	}
	parts = append(parts, m.bodyView(lay))
	if lay.demoRows > 0 {
		parts = append(parts, paneBox("demo", m.demo.View(w-2, lay.demoRows-2, st), w, lay.demoRows, st))
	}
	if lay.eventRows > 0 {
		parts = append(parts, paneBox("events", m.events.view(w-2, lay.eventRows-2, st), w, lay.eventRows, st))
	}
	switch {
	case lay.filterLine && m.command.active:
		parts = append(parts, m.command.view(w, st))
	case lay.filterLine:
		parts = append(parts, m.filter.view(w, m.query.filter.problem, st))
	}
	if lay.noticeLine {
		parts = append(parts, m.noticeView(w))
	}
	if lay.helpLine {
		bindings := m.keys.ShortHelp()
		switch {
		case m.dialog != nil:
			bindings = m.keys.dialogHelp()
		case m.detail.open:
			// The lock may have gone while its detail view is open (a semaphore whose last
			// permit was released): no lock, no holder or together bindings.
			shared, together := false, false
			if l := m.selected(); l != nil {
				shared = l.Shared != nil
				_, together = m.detail.togetherText(l, m.locks.id(l))
			}
			bindings = m.keys.detailHelp(shared, together)
		case m.overview.open:
			bindings = m.keys.overviewHelp()
		}
		parts = append(parts, fitLine(m.help.ShortHelpView(bindings), w))
	}
	screen := fitBlock(strings.Join(parts, "\n"), w, h)
	switch {
	case m.dialog != nil:
		screen = overlay(screen, clipBlock(m.dialog.view(w, h, m.now, st), w, h), w, h)
	case m.showHelp:
		groups := m.keys.FullHelp()
		if m.demo != nil {
			groups = append(groups, m.demo.keys.Bindings())
		}
		box := st.dialog.Render(st.dialogTitle.Render("Keys") + "\n\n" + m.help.FullHelpView(groups) +
			"\n\n" + filterHelp + "\n\n" + st.dim.Render("any key closes"))
		screen = overlay(screen, clipBlock(box, w, h), w, h)
	}
	return screen
}

// bodyView is the table, the detail view, the audit view or the contention overview.
func (m *Model) bodyView(lay layoutInfo) string {
	w, h := m.width, lay.bodyRows
	if h <= 0 {
		return ""
	}
	if m.audit.open {
		return m.audit.view(w, h, m.redact, m.st)
	}
	if m.overview.open {
		return m.overviewView(w, h)
	}
	if m.detail.open {
		return paneBox("details", m.detail.view(m.detailLines(w-2), w-2, h-2, m.st), w, h, m.st)
	}
	late, _ := m.status.late(m.now)
	rc := rowContext{now: m.now, clocks: m.status.clocks, late: late, stuckAfter: m.stuckAfter, waiters: m.waiters, span: m.locks.span, jumped: m.jumped, byServer: m.locks.byServer, st: m.st}
	return m.tableView(lay, rc)
}

func (m *Model) tableView(lay layoutInfo, rc rowContext) string {
	t := m.table
	t.height = lay.tableRows
	t.clamp(m.view)
	out := t.view(m.view, m.locks.get, lay.tableWidth, m.query, rc)
	if m.view.len() == 0 {
		var msg string
		switch {
		case m.status.conn == connConnecting && m.locks.len() == 0:
			msg = "scanning…"
		case !m.query.filter.empty():
			msg = "no lock matches the filter"
		default:
			msg = "no locks under the pattern"
		}
		out += "\n" + m.st.dim.Render("  "+msg)
	}
	return fitBlock(out, lay.tableWidth, lay.bodyRows)
}

func (m *Model) noticeView(w int) string {
	text, bad := m.notice.text, m.notice.bad
	if m.pending > 0 && m.now.Sub(m.notice.at) >= noticeFor {
		text, bad = "action in progress…", false
	}
	text = present.SafeText(text, 0) // notices name keys and holders as read
	if bad {
		return fitLine(m.st.noticeBad.Render(text), w)
	}
	return fitLine(m.st.notice.Render(text), w)
}

// padRight pads or cuts a styled line to exactly width cells.
func padRight(s string, width int) string {
	s = fitLine(s, width)
	if gap := width - lipgloss.Width(s); gap > 0 {
		s += strings.Repeat(" ", gap)
	}
	return s
}

// paneBox frames content (width-2 x height-2) in a border with a title, exactly width x height.
func paneBox(title, content string, width, height int, st styles) string {
	if width < 4 || height < 3 {
		return fitBlock(content, width, height)
	}
	inner := width - 2
	b := st.pane.GetBorderStyle()
	border := st.pane.UnsetBorderStyle().UnsetPadding().Foreground(st.pane.GetBorderTopForeground())
	if st.noColor {
		border = lipgloss.NewStyle()
	}
	var head string
	if tw := lipgloss.Width(title); title != "" && inner >= tw+3 {
		head = border.Render(b.TopLeft+b.Top) + st.paneTitle.Render(" "+title+" ") +
			border.Render(strings.Repeat(b.Top, inner-tw-3)+b.TopRight)
	} else {
		head = border.Render(b.TopLeft + strings.Repeat(b.Top, inner) + b.TopRight)
	}
	lines := []string{head}
	body := strings.Split(fitBlock(content, inner, height-2), "\n")
	for _, ln := range body {
		lines = append(lines, border.Render(b.Left)+padRight(ln, inner)+border.Render(b.Right))
	}
	lines = append(lines, border.Render(b.BottomLeft+strings.Repeat(b.Bottom, inner)+b.BottomRight))
	return strings.Join(lines, "\n")
}
