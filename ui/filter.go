package ui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/present"
)

// filterInput is the `/` prompt. The filter applies live while typing; enter keeps it and
// returns to the table, esc clears it.
type filterInput struct {
	input  textinput.Model
	active bool // the prompt has the keyboard
}

func newFilterInput(st styles) filterInput {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "substring, or glob like lock:order:*"
	in.CharLimit = 256
	in.SetStyles(st.input)
	return filterInput{input: in}
}

func (f *filterInput) open() tea.Cmd {
	f.active = true
	f.input.CursorEnd()
	return f.input.Focus()
}

// filterEvent is what a key did to the filter.
type filterEvent int

const (
	filterTyping  filterEvent = iota // text may have changed
	filterApplied                    // enter: keep the filter, leave the prompt
	filterCleared                    // esc: no filter
)

func (f *filterInput) update(msg tea.KeyPressMsg, keys keyMap) (filterEvent, tea.Cmd) {
	switch {
	case key.Matches(msg, keys.Confirm):
		f.active = false
		f.input.Blur()
		return filterApplied, nil
	case key.Matches(msg, keys.Cancel):
		f.clear()
		return filterCleared, nil
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return filterTyping, cmd
}

func (f *filterInput) paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd
}

func (f *filterInput) clear() {
	f.active = false
	f.input.Blur()
	f.input.SetValue("")
}

func (f filterInput) value() string { return f.input.Value() }

// view is the prompt line: the input while active, else the applied filter.
func (f filterInput) view(width int, st styles) string {
	if f.active {
		f.input.SetWidth(max(width-2, 1))
		return fitLine(f.input.View(), width)
	}
	if f.value() == "" {
		return ""
	}
	return fitLine(st.filter.Render("filter: "+present.SafeText(f.value(), 0))+st.dim.Render("  (/ edit, esc clear)"), width)
}
