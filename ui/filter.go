package ui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

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
	in.Placeholder = "text, glob lock:order:*, format:redisson, holder:host-1, meta:job, is:stuck|noexpiry|waiters, -word"
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

// view is the prompt line: the input while active, else the applied filter; either way
// followed by why a word matches nothing, when one does: problem, the matcher.problem of the
// query the input's value made (every change of the value sets one).
func (f filterInput) view(width int, problem string, st styles) string {
	if p := problem; p != "" {
		problem = "  " + st.warning.Render(present.SafeText(p, 0))
	}
	if f.active {
		f.input.SetWidth(max(width-2-lipgloss.Width(problem), 1))
		return fitLine(f.input.View()+problem, width)
	}
	if f.value() == "" {
		return ""
	}
	return fitLine(st.filter.Render("filter: "+present.SafeText(f.value(), 0))+problem+st.dim.Render("  (/ edit, esc clear)"), width)
}
