package ui

import (
	"fmt"
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

// defaultExtendTTL prefills the extend dialog of a lock without expiry (giving it a TTL at all
// is the point); a lock with a TTL gets its own (see newExtendDialog).
const defaultExtendTTL = 30 * time.Second

type dialogKind int

const (
	dialogRelease dialogKind = iota
	dialogExtend
	dialogReleaseHolder   // one holder of a read-write lock or semaphore (holder)
	dialogExtendHolder    // one holder's leases (holder): a TTL, never shorter
	dialogReleaseTogether // every key of a multi-key lock (together)
)

// extends reports whether the dialog asks for a TTL (extend, extend a holder).
func (k dialogKind) extends() bool { return k == dialogExtend || k == dialogExtendHolder }

// dialogOutcome is what a key did to a dialog.
type dialogOutcome int

const (
	dialogOpen      dialogOutcome = iota // still open
	dialogCancelled                      // closed, nothing to do
	dialogConfirmed                      // closed, run the action
)

// confirmDialog asks before a mutating action. Focus starts on "No", so enter right away
// cancels; the action button works only once the inputs are valid. Typing the key name of a
// live lock is the deliberate act: once it matches, enter releases.
type confirmDialog struct {
	kind     dialogKind
	lock     *scanner.Lock // the record the operator saw: the action compares against its value
	openedAt time.Time
	typed    bool // release: the operator must type the key name (inputs[0])
	// inputs are the text fields: release [key when typed], reason; extend: ttl, reason.
	inputs []textinput.Model
	focus  int  // the input typed into; len(inputs) means the buttons
	onYes  bool // the action button is the chosen one
	// left is the TTL left (extend: a shorter TTL asks again), measured when the dialog opens
	// and again when it is answered; shortenAsk is that second question, open.
	left       time.Duration
	shortenAsk bool
	err        string
	// onServer: of independent servers, where the key alone does not say which lock it is,
	// the dialog names the lock's server.
	onServer bool
	// holder is the holder a dialogReleaseHolder releases, as the census read it; together the
	// other keys a dialogReleaseTogether deletes with the lock's.
	holder   scanner.SharedHolder
	together []string
}

func newReleaseDialog(l *scanner.Lock, now time.Time, st styles) confirmDialog {
	return newDeleteDialog(confirmDialog{kind: dialogRelease, lock: l, openedAt: now}, l.NoExpiry, l.RemainingAt(now), st)
}

// newHolderDialog asks before releasing holder h of shared lock l: typed as a lock's release
// when the holder itself has long to live.
func newHolderDialog(l *scanner.Lock, h scanner.SharedHolder, now time.Time, st styles) confirmDialog {
	left := l.FetchedAt.Add(h.TTL).Sub(now)
	return newDeleteDialog(confirmDialog{kind: dialogReleaseHolder, lock: l, openedAt: now, holder: h}, h.NoExpiry, left, st)
}

// newTogetherDialog asks before deleting l and the keys taken together with it.
func newTogetherDialog(l *scanner.Lock, keys []string, now time.Time, st styles) confirmDialog {
	d := confirmDialog{kind: dialogReleaseTogether, lock: l, openedAt: now, together: keys}
	return newDeleteDialog(d, l.NoExpiry, l.RemainingAt(now), st)
}

// newHolderExtendDialog asks for a new TTL of holder h of shared lock l, prefilled with what it
// has left (at least defaultExtendTTL), rounded up to a second.
func newHolderExtendDialog(l *scanner.Lock, h scanner.SharedHolder, now time.Time, st styles) confirmDialog {
	d := confirmDialog{kind: dialogExtendHolder, lock: l, openedAt: now, holder: h}
	ttlInput := newDialogInput(st, "e.g. 30s, 5m")
	ttlInput.SetValue(wholeSeconds(max(l.FetchedAt.Add(h.TTL).Sub(now), defaultExtendTTL)).String())
	ttlInput.CursorEnd()
	d.inputs = []textinput.Model{ttlInput, newDialogInput(st, "reason, recorded in the audit trail")}
	d.refocus()
	return d
}

// newDeleteDialog completes a dialog that deletes (a lock, a holder, keys): the key must be
// typed when what it deletes never expires or has more than typedConfirmAbove left.
func newDeleteDialog(d confirmDialog, noExpiry bool, left time.Duration, st styles) confirmDialog {
	if noExpiry || left > typedConfirmAbove {
		d.typed = true
		d.inputs = append(d.inputs, newDialogInput(st, "type the key to confirm"))
	}
	d.inputs = append(d.inputs, newDialogInput(st, "reason, recorded in the audit trail"))
	if !d.typed { // nothing to type first: the buttons have the focus (n, ←/→ work)
		d.focus = len(d.inputs)
	}
	d.refocus()
	return d
}

// newExtendDialog prefills the TTL with the longest TTL seen for the lock's holder (span, the
// TTL it was most likely taken with), never below what it has left, so accepting the default
// never shortens it.
func newExtendDialog(l *scanner.Lock, now time.Time, span time.Duration, st styles) confirmDialog {
	d := confirmDialog{kind: dialogExtend, lock: l, openedAt: now}
	ttl := defaultExtendTTL
	if !l.NoExpiry {
		d.left = l.RemainingAt(now)
		ttl = wholeSeconds(max(span, d.left))
	}
	ttlInput := newDialogInput(st, "e.g. 30s, 5m")
	ttlInput.SetValue(ttl.String())
	ttlInput.CursorEnd()
	d.inputs = []textinput.Model{ttlInput, newDialogInput(st, "reason, recorded in the audit trail")}
	d.refocus()
	return d
}

// wholeSeconds rounds d up to a whole second (at least one), a duration an operator reads
// and edits easily.
func wholeSeconds(d time.Duration) time.Duration {
	whole := d.Truncate(time.Second)
	if whole < d {
		whole += time.Second
	}
	return max(whole, time.Second)
}

func newDialogInput(st styles, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = placeholder
	in.CharLimit = 512
	in.SetStyles(st.input)
	return in
}

// refocus gives the cursor to the focused input only.
func (d *confirmDialog) refocus() {
	for i := range d.inputs {
		if i == d.focus {
			d.inputs[i].Focus()
		} else {
			d.inputs[i].Blur()
		}
	}
}

// onButtons says the focus is on the buttons, not in an input.
func (d confirmDialog) onButtons() bool { return d.focus >= len(d.inputs) }

// reason is what the operator typed as the reason.
func (d confirmDialog) reason() string {
	return strings.TrimSpace(d.inputs[len(d.inputs)-1].Value())
}

// ttl is the extend dialog's duration, when valid.
func (d confirmDialog) ttl() (time.Duration, bool) {
	if !d.kind.extends() {
		return 0, false
	}
	v, err := time.ParseDuration(strings.TrimSpace(d.inputs[0].Value()))
	return v, err == nil && v >= time.Millisecond
}

// keyTyped says the typed key name matches (always true when none is asked for). It is typed
// as the console shows it (present.Escape), the form every command takes back: a binary key's
// bytes could not be typed at all.
func (d confirmDialog) keyTyped() bool {
	if !d.typed {
		return true
	}
	key, err := present.Unescape(d.inputs[0].Value())
	return err == nil && key == d.lock.Key
}

// ready says the action button can be pressed.
func (d confirmDialog) ready() bool {
	if d.kind.extends() {
		_, ok := d.ttl()
		return ok
	}
	return d.keyTyped()
}

// shortens says the TTL asked for is below what the lock has left; any TTL is, for a lock
// without expiry (the server refuses both unless told: actions.ExtendAllowingShorten). A
// holder's leases are never shortened: the server refuses, nothing to ask.
func (d confirmDialog) shortens() bool {
	ttl, ok := d.ttl()
	return ok && d.kind == dialogExtend && (d.lock.NoExpiry || ttl < d.left)
}

// update handles one key at time now.
func (d *confirmDialog) update(msg tea.KeyPressMsg, now time.Time, keys keyMap) (dialogOutcome, tea.Cmd) {
	if now.Sub(d.openedAt) < inputGuard {
		return dialogOpen, nil
	}
	if d.shortenAsk { // "shorten 8m43s to 30s? [y/N]": only y shortens, any other key goes back
		d.shortenAsk = false
		if key.Matches(msg, keys.Yes) {
			return dialogConfirmed, nil
		}
		return dialogOpen, nil
	}
	switch {
	case key.Matches(msg, keys.Cancel):
		return dialogCancelled, nil
	case key.Matches(msg, keys.Confirm):
		if !d.lock.NoExpiry {
			d.left = d.lock.RemainingAt(now)
		}
		return d.confirm()
	case key.Matches(msg, keys.SwitchButton), d.onButtons() && key.Matches(msg, keys.ArrowButton):
		d.onYes = !d.onYes
		return dialogOpen, nil
	case key.Matches(msg, keys.NextField):
		d.focus = (d.focus + 1) % (len(d.inputs) + 1)
		d.refocus()
		return dialogOpen, nil
	case key.Matches(msg, keys.PrevField):
		d.focus = (d.focus + len(d.inputs)) % (len(d.inputs) + 1)
		d.refocus()
		return dialogOpen, nil
	case d.onButtons() && key.Matches(msg, keys.No):
		return dialogCancelled, nil
	}
	if d.onButtons() {
		return dialogOpen, nil
	}
	d.err = ""
	var cmd tea.Cmd
	d.inputs[d.focus], cmd = d.inputs[d.focus].Update(msg)
	return dialogOpen, cmd
}

// confirm is enter: the chosen button, except that a typed key name that matches releases.
func (d *confirmDialog) confirm() (dialogOutcome, tea.Cmd) {
	deliberate := d.typed && d.keyTyped()
	if !d.onYes && !deliberate {
		return dialogCancelled, nil
	}
	if !d.ready() {
		d.err = d.notReadyText()
		return dialogOpen, nil
	}
	if d.shortens() {
		d.shortenAsk = true
		return dialogOpen, nil
	}
	return dialogConfirmed, nil
}

// paste feeds pasted text to the focused input (after the guard, like keys).
func (d *confirmDialog) paste(msg tea.PasteMsg, now time.Time) tea.Cmd {
	if d.onButtons() || d.shortenAsk || now.Sub(d.openedAt) < inputGuard {
		return nil
	}
	var cmd tea.Cmd
	d.inputs[d.focus], cmd = d.inputs[d.focus].Update(msg)
	return cmd
}

func (d confirmDialog) notReadyText() string {
	if d.kind.extends() {
		return "enter a duration of at least 1ms (30s, 5m, 1h)"
	}
	return "the text typed is not the key name"
}

// view renders the dialog box for a screen width.
func (d confirmDialog) view(width, height int, now time.Time, st styles) string {
	inner := min(max(width-6, 16), 72)
	l := d.lock
	var title, action string
	switch d.kind {
	case dialogRelease:
		title, action = "Force-release this lock?", "Release"
	case dialogReleaseHolder:
		title, action = "Force-release this holder?", "Release"
	case dialogReleaseTogether:
		title, action = "Force-release every key taken together?", "Release all"
	case dialogExtendHolder:
		title, action = "Extend this holder's lease?", "Extend"
	default:
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
	}
	if d.onServer {
		lines = append(lines, field("server", l.Addr))
	}
	deletes := !d.kind.extends()
	switch d.kind {
	case dialogReleaseHolder, dialogExtendHolder:
		h := d.holder
		ttl = present.HolderTTL(l, h, now) + " (its own lease)"
		lines = append(lines, field("holder", fmt.Sprintf("%s %s ×%d", h.Mode, h.ID, h.Count)))
		if h.Node != "" {
			lines = append(lines, field("node", h.Node+" (trace "+present.OrUnknown(h.Trace)+")"))
		}
		others := len(l.Shared.Live()) - 1
		lines = append(lines, field("ttl", ttl), field("others", present.Count(others, "other holder")+", untouched"), "")
	case dialogReleaseTogether:
		lines = append(lines,
			field("with", strings.Join(d.together, ", ")),
			field("holder", present.Holder(l.Value, l, now)),
			safeField("value", present.Value(l, inner-8)),
			field("ttl", ttl),
			"",
		)
	default:
		lines = append(lines,
			field("holder", present.Holder(l.Value, l, now)),
			safeField("value", present.Value(l, inner-8)),
			field("ttl", ttl),
			"",
		)
	}
	switch {
	case deletes && d.typed && d.kind == dialogReleaseHolder:
		lines = append(lines,
			st.danger.Render("The holder is live. Type the key to confirm:"),
			d.inputView(0, inner))
	case deletes && d.typed:
		lines = append(lines,
			st.danger.Render("The lock is live. Type its key to confirm:"),
			d.inputView(0, inner))
	case d.kind == dialogReleaseHolder:
		lines = append(lines, "Removed only if it still holds exactly this.")
	case d.kind == dialogReleaseTogether:
		lines = append(lines, "Deleted only if every key still holds this value.")
	case d.kind == dialogRelease:
		lines = append(lines, "Deleted only if it still holds this value.")
	case d.kind == dialogExtendHolder:
		lines = append(lines, "New TTL of its leases (if it still holds exactly this; never shorter):", d.inputView(0, inner))
	default:
		lines = append(lines, "New TTL (only if it still holds this value):", d.inputView(0, inner))
	}
	lines = append(lines, "Reason:", d.inputView(len(d.inputs)-1, inner))
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
	help := "tab switch · ↑/↓ field · enter choose · esc cancel"
	if d.shortenAsk {
		ttl, _ := d.ttl()
		from := present.Duration(d.left)
		if d.lock.NoExpiry {
			from = "no expiry"
		}
		lines = append(lines, "", st.danger.Render("shorten "+from+" to "+present.Duration(ttl)+"? [y/N]"))
		help = "y shorten · any other key: back"
	} else {
		lines = append(lines, "", no+"  "+yes)
	}
	lines = append(lines, st.dim.Render(help))
	if len(lines)+2 > height { // a short screen: drop the spacing first
		lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
	}
	for i, ln := range lines {
		lines[i] = fitLine(ln, inner)
	}
	return st.dialog.Render(strings.Join(lines, "\n"))
}

func (d confirmDialog) inputView(i, width int) string {
	in := d.inputs[i]
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
