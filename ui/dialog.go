package ui

import (
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// inputGuard is how long a freshly opened dialog ignores keys: a key held down (or typed
// ahead) when the dialog appears must not confirm it.
const inputGuard = 400 * time.Millisecond

// typedConfirmAbove: force-releasing a lock with more TTL left than this (or none at all)
// requires typing its key, since the holder is most likely alive and working.
const typedConfirmAbove = 5 * time.Second

// defaultExtendTTL prefills the extend dialog.
const defaultExtendTTL = 30 * time.Second

type dialogKind int

const (
	dialogRelease dialogKind = iota
	dialogExtend
)

// dialogOutcome is what a key did to a dialog.
type dialogOutcome int

const (
	dialogOpen      dialogOutcome = iota // still open
	dialogCancelled                      // closed, nothing to do
	dialogConfirmed                      // closed, run the action
)

// confirmDialog asks before a mutating action. Focus starts on "No", so enter right away
// cancels; the action button works only once the input (when there is one) is valid.
type confirmDialog struct {
	kind     dialogKind
	lock     *scanner.Lock // the record the operator saw: the action compares against its value
	openedAt time.Time
	typed    bool // the operator must type the key name
	input    textinput.Model
	hasInput bool
	onYes    bool // focus on the action button
	err      string
}

func newReleaseDialog(l *scanner.Lock, now time.Time, st styles) confirmDialog {
	d := confirmDialog{kind: dialogRelease, lock: l, openedAt: now}
	if l.NoExpiry || l.RemainingAt(now) > typedConfirmAbove {
		d.typed, d.hasInput = true, true
		d.input = newDialogInput(st, "type the key to confirm")
	}
	return d
}

func newExtendDialog(l *scanner.Lock, now time.Time, st styles) confirmDialog {
	d := confirmDialog{kind: dialogExtend, lock: l, openedAt: now, hasInput: true}
	d.input = newDialogInput(st, "e.g. 30s, 5m")
	d.input.SetValue(defaultExtendTTL.String())
	return d
}

func newDialogInput(st styles, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = placeholder
	in.CharLimit = 512
	in.SetStyles(st.input)
	in.Focus()
	return in
}

// ttl is the extend dialog's duration, when valid.
func (d confirmDialog) ttl() (time.Duration, bool) {
	v, err := time.ParseDuration(strings.TrimSpace(d.input.Value()))
	return v, err == nil && v >= time.Millisecond
}

// ready says the action button can be pressed.
func (d confirmDialog) ready() bool {
	switch {
	case d.kind == dialogExtend:
		_, ok := d.ttl()
		return ok
	case d.typed:
		return d.input.Value() == d.lock.Key
	}
	return true
}

// update handles one key at time now.
func (d *confirmDialog) update(msg tea.KeyPressMsg, now time.Time, keys keyMap) (dialogOutcome, tea.Cmd) {
	if now.Sub(d.openedAt) < inputGuard {
		return dialogOpen, nil
	}
	switch {
	case key.Matches(msg, keys.Cancel):
		return dialogCancelled, nil
	case key.Matches(msg, keys.Confirm):
		if !d.onYes {
			return dialogCancelled, nil
		}
		if !d.ready() {
			d.err = d.notReadyText()
			return dialogOpen, nil
		}
		return dialogConfirmed, nil
	case key.Matches(msg, keys.SwitchButton), !d.hasInput && key.Matches(msg, keys.ArrowButton):
		d.onYes = !d.onYes
		return dialogOpen, nil
	case !d.hasInput && key.Matches(msg, keys.No):
		return dialogCancelled, nil
	}
	if !d.hasInput {
		return dialogOpen, nil
	}
	d.err = ""
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return dialogOpen, cmd
}

// paste feeds pasted text to the input (after the guard, like keys).
func (d *confirmDialog) paste(msg tea.PasteMsg, now time.Time) tea.Cmd {
	if !d.hasInput || now.Sub(d.openedAt) < inputGuard {
		return nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d confirmDialog) notReadyText() string {
	if d.kind == dialogExtend {
		return "enter a duration of at least 1ms (30s, 5m, 1h)"
	}
	return "the text typed is not the key name"
}

// view renders the dialog box for a screen width.
func (d confirmDialog) view(width, height int, now time.Time, st styles) string {
	inner := min(max(width-6, 16), 72)
	l := d.lock
	var title, action string
	if d.kind == dialogRelease {
		title, action = "Force-release this lock?", "Release"
	} else {
		title, action = "Extend this lock's TTL?", "Extend"
	}
	// safeField shows text already escaped; field escapes text as read from Redis.
	safeField := func(name, safe string) string { return st.label.Render(cell(name, 8)) + safe }
	field := func(name, v string) string { return safeField(name, present.SafeText(v, 0)) }
	ttl := present.NeverExpires
	if !l.NoExpiry {
		ttl = present.Duration(l.RemainingAt(now)) + " left"
	}
	lines := []string{
		st.dialogTitle.Render(title),
		"",
		field("key", l.Key),
		field("holder", present.Holder(l.Value, l, now)),
		safeField("value", present.Value(l, inner-8)),
		field("ttl", ttl),
		"",
	}
	switch {
	case d.kind == dialogRelease && d.typed:
		lines = append(lines,
			st.danger.Render("The lock is live. Type its key to confirm:"),
			d.inputView(inner))
	case d.kind == dialogRelease:
		lines = append(lines, "Deleted only if it still holds this value.")
	default:
		lines = append(lines, "New TTL (only if it still holds this value):", d.inputView(inner))
	}
	if d.err != "" {
		lines = append(lines, st.noticeBad.Render(d.err))
	}
	no := st.button.Render("No")
	if !d.onYes {
		no = st.buttonFocus.Render("No")
	}
	yes := st.button.Render(action)
	switch {
	case !d.ready():
		yes = st.buttonOff.Render(action)
	case d.onYes:
		yes = st.buttonFocus.Render(action)
	}
	lines = append(lines, "", no+"  "+yes, st.dim.Render("tab switch · enter choose · esc cancel"))
	if len(lines)+2 > height { // a short screen: drop the spacing first
		lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
	}
	for i, ln := range lines {
		lines[i] = fitLine(ln, inner)
	}
	return st.dialog.Render(strings.Join(lines, "\n"))
}

func (d confirmDialog) inputView(width int) string {
	in := d.input
	in.SetWidth(max(width-3, 1))
	return in.View()
}

// overlay draws box centred over base (a full screen of width x height).
func overlay(base, box string, width, height int) string {
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	x, y := max((width-bw)/2, 0), max((height-bh)/2, 0)
	c := lipgloss.NewCompositor(
		lipgloss.NewLayer(base),
		lipgloss.NewLayer(box).X(x).Y(y).Z(1),
	)
	return c.Render()
}
