package ui

import "charm.land/bubbles/v2/key"

// keyMap holds every key binding of the TUI; the help view is generated from it, so a binding
// that is disabled (the actions in read-only mode) disappears from the help as well.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	Filter, ClearFilter                key.Binding
	SortTTL, SortAge, SortKey, SortHol key.Binding
	Detail, Events, Help, Quit         key.Binding
	Overview                           key.Binding // the contention overview
	ForceQuit                          key.Binding // ctrl+c: quits from anywhere

	Release, Extend, Audit key.Binding
	CopyKey, CopyValue     key.Binding // OSC 52, from the table or the detail view
	Command                key.Binding // the `:` command line (:context, :pattern)
	Zoom                   key.Binding // the detail view's timeline: the time it shows
	// The detail view of a read-write lock or semaphore: the holder cursor; of a multi-key
	// lock: release every key taken together.
	NextHolder, PrevHolder, ReleaseTogether key.Binding
	Complete                                key.Binding // tab in the command line
	// ReadOnlyHint is d or e in read-only mode, answered with why nothing happens (no help
	// entry: the actions do not exist there).
	ReadOnlyHint key.Binding

	// Inside dialogs, the filter prompt and the audit view.
	SwitchButton, ArrowButton, No, Confirm, Cancel, Reload key.Binding
	NextField, PrevField, Yes                              key.Binding
}

func newKeyMap(readOnly bool) keyMap {
	k := keyMap{
		Up:              key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:            key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:          key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:        key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		Top:             key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		Bottom:          key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Filter:          key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		ClearFilter:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear/close")),
		SortTTL:         key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "sort by ttl")),
		SortAge:         key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "sort by age")),
		SortKey:         key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "sort by key")),
		SortHol:         key.NewBinding(key.WithKeys("H"), key.WithHelp("H", "sort by holder")),
		Detail:          key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Events:          key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "event log")),
		Overview:        key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "contention")),
		Help:            key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:            key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		ForceQuit:       key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Release:         key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "force-release")),
		Extend:          key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend ttl")),
		Audit:           key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "audit trail")),
		CopyKey:         key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy key")),
		CopyValue:       key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "copy value")),
		Command:         key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "context/pattern")),
		Zoom:            key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "zoom timeline")),
		NextHolder:      key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next holder")),
		PrevHolder:      key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous holder")),
		ReleaseTogether: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "release all keys together")),
		Complete:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
		// In a dialog with a text input, left/right move in the text: only tab switches buttons.
		SwitchButton: key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "switch button")),
		ArrowButton:  key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "switch button")),
		No:           key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "no")),
		Confirm:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose")),
		Cancel:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Reload:       key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload")),
		NextField:    key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "next field")),
		PrevField:    key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "previous field")),
		Yes:          key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		ReadOnlyHint: key.NewBinding(key.WithKeys("d", "e")),
	}
	if readOnly {
		// Read-only: the mutating actions are not merely refused, they do not exist.
		k.Release.SetEnabled(false)
		k.Extend.SetEnabled(false)
		k.ReleaseTogether.SetEnabled(false)
	} else {
		k.ReadOnlyHint.SetEnabled(false)
	}
	return k
}

// ShortHelp is the one-line footer.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Filter, k.Detail, k.Release, k.Extend, k.Audit, k.SortTTL, k.Help, k.Quit}
}

// FullHelp is the `?` view, one column per group.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Filter, k.ClearFilter, k.Command, k.SortTTL, k.SortAge, k.SortKey, k.SortHol},
		{k.Detail, k.CopyKey, k.CopyValue, k.Events, k.Overview, k.Audit, k.Release, k.Extend, k.Help, k.Quit},
	}
}

// detailHelp is the footer while the detail view is open: of a shared lock (holders to pick
// and release one by one), of a lock with keys taken together (together: D), of another lock.
func (k keyMap) detailHelp(shared, together bool) []key.Binding {
	scroll := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓ pgup/pgdn", "scroll"))
	closeIt := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close"))
	switch {
	case shared:
		release := key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "release holder"), key.WithDisabled())
		release.SetEnabled(k.Release.Enabled())
		return []key.Binding{k.NextHolder, release, scroll, k.Zoom, k.CopyKey, closeIt, k.Quit}
	case together:
		return []key.Binding{scroll, k.Zoom, k.CopyKey, k.CopyValue, k.Release, k.ReleaseTogether, k.Extend, closeIt, k.Quit}
	}
	return []key.Binding{scroll, k.Zoom, k.CopyKey, k.CopyValue, k.Release, k.Extend, closeIt, k.Quit}
}

// overviewHelp is the footer while the contention overview is open.
func (k keyMap) overviewHelp() []key.Binding {
	move := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "group"))
	filter := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "its locks"))
	closeIt := key.NewBinding(key.WithKeys("o", "esc"), key.WithHelp("o/esc", "close"))
	return []key.Binding{move, filter, closeIt, k.Help, k.Quit}
}

// dialogHelp is the footer while a dialog is open.
func (k keyMap) dialogHelp() []key.Binding {
	return []key.Binding{k.SwitchButton, k.NextField, k.Confirm, k.Cancel}
}
