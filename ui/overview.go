package ui

import (
	"math"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/keygroup"
)

// overviewPane is the `o` screen: the contention overview, a line per key group ranked by
// waiters now, then hand-offs per second (contention.ranked), with sparklines of both over
// the window. It keeps only the selected group's name: the ranking moves under it.
type overviewPane struct {
	open     bool
	selected string // the selected group; "" or a group no longer shown: the first line
}

// Overview column widths.
const (
	ovLocksWidth = 7
	ovWaitWidth  = 4
	ovRateWidth  = 6
	ovMinGroup   = 6
	ovMaxGroup   = 24
	ovMinSpark   = 8
)

// overviewColumns are the columns that fit a width: GROUP always, then, as it widens,
// WAIT, H/S, LOCKS and the two sparklines (waiters, then hand-offs).
type overviewColumns struct {
	group             int
	wait, rate, locks bool
	waitSpark, hand   int // sparkline widths; 0: not shown
}

func layoutOverview(width int, groups []groupFigures) overviewColumns {
	want := len("GROUP")
	for _, g := range groups {
		want = max(want, len(g.name))
	}
	want = min(want, ovMaxGroup)
	c := overviewColumns{group: min(want, ovMinGroup)}
	rest := width - flagWidth - c.group
	if rest < 0 {
		c.group = max(width-flagWidth, 1)
		return c
	}
	take := func(on *bool, w int) {
		if rest >= w+1 {
			*on, rest = true, rest-w-1
		}
	}
	// The figures first, then the group's name whole, then LOCKS and the sparklines.
	take(&c.wait, ovWaitWidth)
	if c.wait {
		take(&c.rate, ovRateWidth)
	}
	grow := min(rest, want-c.group)
	c.group, rest = c.group+grow, rest-grow
	if c.rate {
		take(&c.locks, ovLocksWidth)
	}
	if c.locks {
		switch spark := (rest - 2) / 2; {
		case spark >= ovMinSpark:
			c.waitSpark = min(spark, contentionBuckets)
			c.hand = c.waitSpark
		case rest-1 >= ovMinSpark:
			c.waitSpark = min(rest-1, contentionBuckets)
		}
	}
	return c
}

// overviewScale is the largest value of each sparkline column: the groups' lines share a scale,
// so that their heights compare.
type overviewScale struct{ waiters, handoffs float64 }

func scaleOf(groups []groupFigures) overviewScale {
	var s overviewScale
	for _, g := range groups {
		for i := range g.waitLine {
			if !math.IsNaN(g.waitLine[i]) {
				s.waiters = max(s.waiters, g.waitLine[i])
			}
			if !math.IsNaN(g.handLine[i]) {
				s.handoffs = max(s.handoffs, g.handLine[i])
			}
		}
	}
	return s
}

func (c overviewColumns) header(scale overviewScale) string {
	var sb strings.Builder
	sb.WriteString(strings.Repeat(" ", flagWidth) + cell("GROUP", c.group))
	if c.wait {
		sb.WriteString(" " + cellRight("WAIT", ovWaitWidth))
	}
	if c.rate {
		sb.WriteString(" " + cellRight("H/S", ovRateWidth))
	}
	if c.locks {
		sb.WriteString(" " + cellRight("LOCKS", ovLocksWidth))
	}
	if c.waitSpark > 0 {
		sb.WriteString(" " + cell(sparkTitle("WAITERS", scale.waiters, c.waitSpark), c.waitSpark))
	}
	if c.hand > 0 {
		sb.WriteString(" " + cell(sparkTitle("HAND-OFFS/"+bucketLabel, scale.handoffs, c.hand), c.hand))
	}
	return sb.String()
}

// sparkTitle names a sparkline column, its span and, when it fits, what its full block is.
func sparkTitle(name string, top float64, width int) string {
	title := name + " " + windowLabel
	if long := title + " █=" + strconv.FormatFloat(top, 'f', 0, 64); lipgloss.Width(long) <= width {
		return long
	}
	return title
}

// windowLabel and bucketLabel name the sparklines' span and a cell's (a bucket's).
var (
	windowLabel = strconv.Itoa(int(contentionWindow.Minutes())) + "m"
	bucketLabel = strconv.Itoa(int(contentionBucket.Seconds())) + "s"
)

func (c overviewColumns) row(g groupFigures, selected bool, scale overviewScale, st styles) string {
	plain := selected
	name := cell(g.name, c.group)
	if g.name == keygroup.Other && !plain {
		name = st.dim.Render(name)
	}
	var sb strings.Builder
	sb.WriteString(strings.Repeat(" ", flagWidth) + name)
	if c.wait {
		w := cellRight(strconv.Itoa(g.waiters), ovWaitWidth)
		if g.waiters > 0 && !plain {
			w = st.warning.Render(w)
		}
		sb.WriteString(" " + w)
	}
	if c.rate {
		sb.WriteString(" " + cellRight(formatRate(g.rate), ovRateWidth))
	}
	if c.locks {
		sb.WriteString(" " + cellRight(strconv.Itoa(g.locks), ovLocksWidth))
	}
	spark := func(values []float64, width int, top float64, style func(string) string) {
		if width == 0 {
			return
		}
		line := sparkline(values, width, top)
		if !plain {
			line = style(line)
		}
		sb.WriteString(" " + line)
	}
	spark(g.waitLine, c.waitSpark, scale.waiters, func(s string) string { return st.sparkWait.Render(s) })
	spark(g.handLine, c.hand, scale.handoffs, func(s string) string { return st.sparkHand.Render(s) })
	if selected {
		return st.selected.Render(sb.String())
	}
	return sb.String()
}

// formatRate writes a rate per second in at most 6 cells: two decimals below 1 (one
// hand-off a minute is 0.02, not 0), one below 10, none above.
func formatRate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 1:
		return strconv.FormatFloat(r, 'f', 2, 64)
	case r < 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	case r < 100_000:
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r/1000, 'f', 0, 64) + "k"
}

// overviewView is the overview in width x height: a title line, the header and the groups,
// the selected one kept on screen.
func (m *Model) overviewView(width, height int) string {
	st := m.st
	groups := m.contention.ranked(m.now)
	rule := m.groups.String()
	if n := m.contention.folder.Folded(); n > 0 { // how many groups _other stands for
		rule += ", " + strconv.Itoa(n) + " more in " + keygroup.Other
	}
	title := st.paneTitle.Render("Contention by key group") +
		st.dim.Render("  "+rule+" · waiters now, hand-offs/s over 1m · enter: its locks · o/esc close")
	lines := []string{fitLine(title, width)}
	if len(groups) == 0 {
		msg := "no lock groups yet"
		if m.status.conn == connConnecting {
			msg = "scanning…"
		}
		lines = append(lines, st.dim.Render(fitLine("  "+msg, width)))
		return fitBlock(strings.Join(lines, "\n"), width, height)
	}
	cols, scale := layoutOverview(width, groups), scaleOf(groups)
	lines = append(lines, st.header.Render(fitLine(cols.header(scale), width)))
	rows := max(height-len(lines), 0)
	sel := max(indexOfGroup(groups, m.overview.selected), 0)
	offset := max(sel-rows+1, 0)
	for i := offset; i < min(offset+rows, len(groups)); i++ {
		lines = append(lines, fitLine(cols.row(groups[i], i == sel, scale, st), width))
	}
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

func indexOfGroup(groups []groupFigures, name string) int {
	for i, g := range groups {
		if g.name == name {
			return i
		}
	}
	return -1
}

// onOverviewKey moves in the overview, closes it, or shows the table filtered to the selected
// group (`group:NAME`, the filter's word for it).
func (m *Model) onOverviewKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	groups := m.contention.ranked(m.now)
	sel := max(indexOfGroup(groups, m.overview.selected), 0)
	page := max(m.layout().bodyRows-3, 1)
	move := func(to int) {
		if len(groups) > 0 {
			m.overview.selected = groups[min(max(to, 0), len(groups)-1)].name
		}
	}
	switch {
	case key.Matches(msg, k.Cancel, k.Overview):
		m.overview.open = false
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Up):
		move(sel - 1)
	case key.Matches(msg, k.Down):
		move(sel + 1)
	case key.Matches(msg, k.PageUp):
		move(sel - page)
	case key.Matches(msg, k.PageDown):
		move(sel + page)
	case key.Matches(msg, k.Top):
		move(0)
	case key.Matches(msg, k.Bottom):
		move(len(groups) - 1)
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.Detail) && len(groups) > 0:
		m.overview.open = false
		m.filter.input.SetValue(groupFilter(groups[sel].name))
		q := viewQuery{filter: newMatcher(m.filter.value()), sort: m.query.sort, desc: m.query.desc}
		return m.setQuery(q, true)
	}
	return nil
}
