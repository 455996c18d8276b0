package ui

import (
	"slices"

	tea "charm.land/bubbletea/v2"
)

// focusCmd tells the scanner which keys are on screen, when they changed since it last did,
// so that it re-reads them about once a second (scanner.Follower.Focus). Nil when nothing
// changed or no scanner listens.
func (m *Model) focusCmd() tea.Cmd {
	if m.focus == nil {
		return nil
	}
	keys := slices.DeleteFunc(m.table.visible(m.view), func(key string) bool { return key == "" })
	if m.locks.byServer { // ids of server and key: the scanner re-reads a key on every server
		for i, id := range keys {
			_, keys[i] = splitLockID(id)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	if slices.Equal(keys, m.focused) {
		return nil
	}
	m.focused = keys
	focus := m.focus
	return func() tea.Msg {
		focus(keys)
		return nil
	}
}
