package ui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/lockscope/lockscope/locklib"
)

// styles holds every lipgloss style the TUI uses; nothing else in the package builds a style.
// Colours are given in true colour and downsampled by Bubble Tea to the terminal's profile
// (256 colours, 16 colours); without colour (NO_COLOR, a dumb terminal) the styles fall back
// to attributes only (bold, reverse, underline), so the states stay distinguishable.
type styles struct {
	noColor bool

	title     lipgloss.Style
	statusKey lipgloss.Style
	statusVal lipgloss.Style
	connOK    lipgloss.Style
	connBad   lipgloss.Style
	badge     lipgloss.Style // the read-only badge
	banner    lipgloss.Style // "reconnecting…"
	warning   lipgloss.Style
	jumped    lipgloss.Style // the ⇡ of a fence token that jumped, and its line in the detail view

	header      lipgloss.Style // table column titles
	row         lipgloss.Style
	selected    lipgloss.Style
	stuck       lipgloss.Style // flag for locks held longer than --stuck-after
	noExpiry    lipgloss.Style // flag for locks that never expire
	dim         lipgloss.Style
	late        lipgloss.Style // a row from a server that stopped answering: its data is old
	barFull     lipgloss.Style // TTL bar, plenty left
	barMid      lipgloss.Style
	barLow      lipgloss.Style
	barEmpty    lipgloss.Style
	pane        lipgloss.Style // bordered panes (detail, event log, extra pane)
	paneTitle   lipgloss.Style
	label       lipgloss.Style // field names in the detail pane
	dialog      lipgloss.Style
	dialogTitle lipgloss.Style
	button      lipgloss.Style
	buttonFocus lipgloss.Style
	buttonOff   lipgloss.Style // a button that cannot be pressed yet
	danger      lipgloss.Style
	notice      lipgloss.Style // result of the last action
	noticeBad   lipgloss.Style
	filter      lipgloss.Style
	sparkWait   lipgloss.Style // the contention overview's sparklines: waiters
	sparkHand   lipgloss.Style // and hand-offs

	// The pictures of the detail view (timeline.go).
	timelineHeld    lipgloss.Style // a holding in Redis
	timelineSilent  lipgloss.Style // a crashed holder's lock, until it expires
	timelineSection lipgloss.Style // a demo worker working without the lock
	timelineOverlap lipgloss.Style // two holders at once: must catch the eye
	timelineSpark   lipgloss.Style // sparklines and histograms
	timelineMarks   map[markKind]lipgloss.Style

	eventKind map[string]lipgloss.Style

	help  help.Styles
	input textinput.Styles
}

// newStyles builds the styles for a colour profile and background.
func newStyles(profile colorprofile.Profile, isDark bool) styles {
	if profile <= colorprofile.ASCII && profile != colorprofile.Unknown {
		return monoStyles()
	}
	ld := lipgloss.LightDark(isDark)
	fg := ld(lipgloss.Color("#1f2328"), lipgloss.Color("#d0d7de"))
	muted := ld(lipgloss.Color("#6e7781"), lipgloss.Color("#8b949e"))
	accent := ld(lipgloss.Color("#0969da"), lipgloss.Color("#58a6ff"))
	green := ld(lipgloss.Color("#1a7f37"), lipgloss.Color("#3fb950"))
	yellow := ld(lipgloss.Color("#9a6700"), lipgloss.Color("#d29922"))
	red := ld(lipgloss.Color("#cf222e"), lipgloss.Color("#f85149"))
	magenta := ld(lipgloss.Color("#8250df"), lipgloss.Color("#bc8cff"))
	selBg := ld(lipgloss.Color("#ddf4ff"), lipgloss.Color("#1f3a5f"))
	barBg := ld(lipgloss.Color("#d0d7de"), lipgloss.Color("#30363d"))
	barEmpty := ld(lipgloss.Color("#afb8c1"), lipgloss.Color("#484f58"))

	s := styles{
		title:       lipgloss.NewStyle().Bold(true).Foreground(accent),
		statusKey:   lipgloss.NewStyle().Foreground(muted),
		statusVal:   lipgloss.NewStyle().Foreground(fg),
		connOK:      lipgloss.NewStyle().Foreground(green),
		connBad:     lipgloss.NewStyle().Bold(true).Foreground(red),
		badge:       lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#000000")).Background(yellow),
		banner:      lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#ffffff")).Background(red),
		warning:     lipgloss.NewStyle().Foreground(yellow),
		jumped:      lipgloss.NewStyle().Bold(true).Foreground(yellow),
		header:      lipgloss.NewStyle().Bold(true).Foreground(muted),
		row:         lipgloss.NewStyle().Foreground(fg),
		selected:    lipgloss.NewStyle().Bold(true).Foreground(fg).Background(selBg),
		stuck:       lipgloss.NewStyle().Bold(true).Foreground(red),
		noExpiry:    lipgloss.NewStyle().Bold(true).Foreground(magenta),
		dim:         lipgloss.NewStyle().Foreground(muted),
		late:        lipgloss.NewStyle().Foreground(muted).Faint(true),
		barFull:     lipgloss.NewStyle().Foreground(green).Background(barBg),
		barMid:      lipgloss.NewStyle().Foreground(yellow).Background(barBg),
		barLow:      lipgloss.NewStyle().Foreground(red).Background(barBg),
		barEmpty:    lipgloss.NewStyle().Foreground(barEmpty),
		pane:        lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(muted),
		paneTitle:   lipgloss.NewStyle().Bold(true).Foreground(accent),
		label:       lipgloss.NewStyle().Foreground(muted),
		dialog:      lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1),
		dialogTitle: lipgloss.NewStyle().Bold(true).Foreground(accent),
		button:      lipgloss.NewStyle().Padding(0, 1).Foreground(fg).Background(barBg),
		buttonFocus: lipgloss.NewStyle().Padding(0, 1).Bold(true).Foreground(lipgloss.Color("#ffffff")).Background(accent),
		buttonOff:   lipgloss.NewStyle().Padding(0, 1).Foreground(muted).Strikethrough(true),
		danger:      lipgloss.NewStyle().Bold(true).Foreground(red),
		notice:      lipgloss.NewStyle().Foreground(green),
		noticeBad:   lipgloss.NewStyle().Bold(true).Foreground(red),
		filter:      lipgloss.NewStyle().Foreground(accent),
		sparkWait:   lipgloss.NewStyle().Foreground(accent), // as the detail view's waiters sparkline
		sparkHand:   lipgloss.NewStyle().Foreground(green),

		timelineHeld:    lipgloss.NewStyle().Foreground(green),
		timelineSilent:  lipgloss.NewStyle().Foreground(muted),
		timelineSection: lipgloss.NewStyle().Foreground(yellow),
		timelineOverlap: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#ffffff")).Background(red),
		timelineSpark:   lipgloss.NewStyle().Foreground(accent),
		timelineMarks: map[markKind]lipgloss.Style{
			markPause: lipgloss.NewStyle().Bold(true).Foreground(yellow),
			markLost:  lipgloss.NewStyle().Bold(true).Foreground(red),
			markCrash: lipgloss.NewStyle().Bold(true).Foreground(red),
			markStale: lipgloss.NewStyle().Bold(true).Foreground(magenta),
		},
		eventKind: map[string]lipgloss.Style{
			string(locklib.EventAcquired):    lipgloss.NewStyle().Foreground(green),
			string(locklib.EventReleased):    lipgloss.NewStyle().Foreground(accent),
			string(locklib.EventRenewed):     lipgloss.NewStyle().Foreground(muted),
			string(locklib.EventRenewFailed): lipgloss.NewStyle().Foreground(yellow),
			string(locklib.EventLost):        lipgloss.NewStyle().Bold(true).Foreground(red),
			string(locklib.EventWaiting):     lipgloss.NewStyle().Foreground(yellow),
			kindAction:                       lipgloss.NewStyle().Bold(true).Foreground(magenta),
			kindWarning:                      lipgloss.NewStyle().Bold(true).Foreground(yellow),
			kindFailover:                     lipgloss.NewStyle().Bold(true).Foreground(red),
			kindFenceJump:                    lipgloss.NewStyle().Bold(true).Foreground(yellow),
		},
		help: help.DefaultStyles(isDark),
	}
	s.input = inputStyles(textinput.DefaultStyles(isDark), accent)
	return s
}

// monoStyles is the attribute-only set for terminals without colour.
func monoStyles() styles {
	plain := lipgloss.NewStyle()
	bold := plain.Bold(true)
	rev := plain.Reverse(true)
	return styles{
		noColor:     true,
		title:       bold,
		statusKey:   plain,
		statusVal:   plain,
		connOK:      plain,
		connBad:     bold,
		badge:       rev.Bold(true),
		banner:      rev.Bold(true),
		warning:     bold,
		jumped:      bold,
		header:      bold.Underline(true),
		row:         plain,
		selected:    rev,
		stuck:       bold,
		noExpiry:    bold,
		dim:         plain,
		late:        plain.Faint(true),
		barFull:     plain,
		barMid:      plain,
		barLow:      plain,
		barEmpty:    plain,
		pane:        plain.Border(lipgloss.NormalBorder()),
		paneTitle:   bold,
		label:       plain,
		dialog:      plain.Border(lipgloss.DoubleBorder()).Padding(0, 1),
		dialogTitle: bold,
		button:      plain.Padding(0, 1),
		buttonFocus: rev.Padding(0, 1).Bold(true),
		buttonOff:   plain.Padding(0, 1).Strikethrough(true),
		danger:      bold,
		notice:      plain,
		noticeBad:   bold,
		filter:      plain,
		sparkWait:   plain,
		sparkHand:   plain,
		eventKind:   map[string]lipgloss.Style{},

		timelineHeld:    plain,
		timelineSilent:  plain,
		timelineSection: plain,
		timelineOverlap: rev.Bold(true),
		timelineSpark:   plain,
		timelineMarks:   map[markKind]lipgloss.Style{},
		help: help.Styles{
			Ellipsis: plain, ShortKey: bold, ShortDesc: plain, ShortSeparator: plain,
			FullKey: bold, FullDesc: plain, FullSeparator: plain,
		},
		input: inputStyles(textinput.Styles{
			Focused: textinput.StyleState{Text: plain, Placeholder: plain, Suggestion: plain, Prompt: bold},
			Blurred: textinput.StyleState{Text: plain, Placeholder: plain, Suggestion: plain, Prompt: plain},
		}, nil),
	}
}

// inputStyles makes the text inputs' cursor steady: a blinking cursor would redraw the screen
// twice a second for nothing and make rendered views depend on timing.
func inputStyles(s textinput.Styles, cursor color.Color) textinput.Styles {
	s.Cursor.Blink = false
	if cursor != nil {
		s.Cursor.Color = cursor
	}
	return s
}

// eventStyle is the style of one kind of event-log line.
func (s styles) eventStyle(kind string) lipgloss.Style {
	if st, ok := s.eventKind[kind]; ok {
		return st
	}
	return s.row
}

// timelineMark is the style of a mark on the timeline.
func (s styles) timelineMark(kind markKind) lipgloss.Style {
	if st, ok := s.timelineMarks[kind]; ok {
		return st
	}
	return s.label.Bold(true)
}

// demoState is the style of a demo worker row by its state (demo.WorkerState): the pane's
// colours come from the palette above, so NO_COLOR and light terminals are covered too.
func (s styles) demoState(state string) lipgloss.Style {
	switch state {
	case "working", "holding":
		return s.notice
	case "paused":
		return s.warning
	case "crashed":
		return s.danger
	default: // waiting
		return s.dim
	}
}
