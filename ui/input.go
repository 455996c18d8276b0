package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/present"
)

// wheelStep is how many rows one wheel notch scrolls.
const wheelStep = 3

// onKey routes a key press: the open dialog, the help, the filter prompt or the audit view
// take it first, in that order; otherwise it acts on the table.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) { // even from a dialog or the filter prompt
		return tea.Quit
	}
	switch {
	case m.dialog != nil:
		return m.onDialogKey(msg)
	case m.showHelp:
		// Any key closes the help; q closes it rather than quitting.
		m.showHelp = false
		return nil
	case m.filter.active:
		return m.onFilterKey(msg)
	case m.command.active:
		return m.onCommandKey(msg)
	case m.audit.open:
		return m.onAuditKey(msg)
	case m.overview.open:
		return m.onOverviewKey(msg)
	case m.detail.open:
		return m.onDetailKey(msg)
	}
	if m.demo != nil {
		if cmd, handled := m.demo.Update(msg); handled {
			return cmd
		}
	}
	view := m.view
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Up):
		m.table.moveBy(-1, view)
	case key.Matches(msg, k.Down):
		m.table.moveBy(1, view)
	case key.Matches(msg, k.PageUp):
		m.table.moveBy(-max(m.table.height-1, 1), view)
	case key.Matches(msg, k.PageDown):
		m.table.moveBy(max(m.table.height-1, 1), view)
	case key.Matches(msg, k.Top):
		m.table.moveTo(0, view)
	case key.Matches(msg, k.Bottom):
		m.table.moveTo(view.len()-1, view)
	case key.Matches(msg, k.Filter):
		return m.filter.open()
	case key.Matches(msg, k.Command):
		return m.command.open()
	case key.Matches(msg, k.ClearFilter):
		switch {
		case m.filter.value() != "":
			m.filter.clear()
			return m.setQuery(viewQuery{filter: newMatcher(""), sort: m.query.sort, desc: m.query.desc}, true)
		}
	case key.Matches(msg, k.SortTTL):
		return m.sortBy(present.SortByTTL)
	case key.Matches(msg, k.SortAge):
		return m.sortBy(present.SortByAge)
	case key.Matches(msg, k.SortKey):
		return m.sortBy(present.SortByKey)
	case key.Matches(msg, k.SortHol):
		return m.sortBy(present.SortByHolder)
	case key.Matches(msg, k.Detail):
		return m.openDetail()
	case key.Matches(msg, k.CopyKey, k.CopyValue):
		return m.copySelected(key.Matches(msg, k.CopyValue))
	case key.Matches(msg, k.Events):
		m.events.open = !m.events.open
	case key.Matches(msg, k.Overview):
		m.overview.open = true
	case m.onActionKey(msg):
	case key.Matches(msg, k.Audit):
		return m.openAudit()
	}
	m.table.setHeight(m.layout().tableRows, m.view)
	return nil
}

// sortBy sorts by k; choosing the current column again reverses the order.
func (m *Model) sortBy(k present.Sort) tea.Cmd {
	q := m.query
	if q.sort == k {
		q.desc = !q.desc
	} else {
		q.sort, q.desc = k, false
	}
	return m.setQuery(q, false)
}

func (m *Model) onFilterKey(msg tea.KeyPressMsg) tea.Cmd {
	before := m.filter.value()
	ev, cmd := m.filter.update(msg, m.keys)
	if ev == filterApplied || m.filter.value() == before && ev != filterCleared {
		return cmd
	}
	q := viewQuery{filter: newMatcher(m.filter.value()), sort: m.query.sort, desc: m.query.desc}
	return tea.Batch(cmd, m.setQuery(q, true))
}

func (m *Model) onPaste(msg tea.PasteMsg) tea.Cmd {
	switch {
	case m.dialog != nil:
		return m.dialog.paste(msg, m.clock())
	case m.command.active:
		var cmd tea.Cmd
		m.command.input, cmd = m.command.input.Update(msg)
		return cmd
	case m.filter.active:
		before := m.filter.value()
		cmd := m.filter.paste(msg)
		if m.filter.value() == before {
			return cmd
		}
		q := viewQuery{filter: newMatcher(m.filter.value()), sort: m.query.sort, desc: m.query.desc}
		return tea.Batch(cmd, m.setQuery(q, true))
	}
	return nil
}

func (m *Model) onAuditKey(msg tea.KeyPressMsg) tea.Cmd {
	body := m.layout().bodyRows
	switch {
	case key.Matches(msg, m.keys.Cancel, m.keys.Audit):
		m.audit.open = false
	case key.Matches(msg, m.keys.Reload):
		return m.openAudit()
	case key.Matches(msg, m.keys.Up):
		m.audit.scroll(-1, body-2)
	case key.Matches(msg, m.keys.Down):
		m.audit.scroll(1, body-2)
	case key.Matches(msg, m.keys.PageUp):
		m.audit.scroll(-(body - 2), body-2)
	case key.Matches(msg, m.keys.PageDown):
		m.audit.scroll(body-2, body-2)
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	}
	return nil
}

// onWheel scrolls whatever is under the pointer: the audit view or the table.
func (m *Model) onWheel(msg tea.MouseWheelMsg) {
	step := 0
	switch msg.Button {
	case tea.MouseWheelUp:
		step = -wheelStep
	case tea.MouseWheelDown:
		step = wheelStep
	default:
		return
	}
	if m.dialog != nil || m.showHelp {
		return
	}
	if m.audit.open {
		body := m.layout().bodyRows
		m.audit.scroll(step, body-2)
		return
	}
	if m.overview.open {
		return
	}
	if m.detail.open {
		m.scrollDetail(step)
		return
	}
	m.table.scrollBy(step, m.view)
}

// onClick selects the table row under the pointer.
func (m *Model) onClick(msg tea.MouseClickMsg) {
	if msg.Button != tea.MouseLeft || m.dialog != nil || m.showHelp || m.audit.open {
		return
	}
	lay := m.layout()
	if !lay.tableShown || msg.X >= lay.tableWidth {
		return
	}
	row := msg.Y - lay.tableTop - 1 // the header takes the first line
	if row < 0 || row >= lay.tableRows {
		return
	}
	if i := m.table.offset + row; i < m.view.len() {
		m.table.moveTo(i, m.view)
	}
}

// onActionKey handles the keys the table and the detail view answer alike: the help, and
// release and extend of the selected lock (or, read-only, why they do not exist). It reports
// whether msg was one of them.
func (m *Model) onActionKey(msg tea.KeyPressMsg) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.Help):
		m.showHelp = true
	case key.Matches(msg, k.Release):
		m.openDialog(dialogRelease)
	case key.Matches(msg, k.Extend):
		m.openDialog(dialogExtend)
	case key.Matches(msg, k.ReadOnlyHint):
		m.sayReadOnly()
	default:
		return false
	}
	return true
}

// sayReadOnly answers d or e in read-only mode: the actions do not exist there, and why.
func (m *Model) sayReadOnly() {
	m.setNotice("read-only (--read-only): locks cannot be released or extended from this console", true)
}
