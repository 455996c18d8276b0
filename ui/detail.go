package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// detailPane is the full-screen detail view of the selected lock: every field, wrapped to
// the screen's width and scrolled with the movement keys (decoded fields, the whole value
// read, its real size when only its start was read, the cluster master that holds it, or for
// Redlock each instance's value and TTL and the quorum).
type detailPane struct {
	open   bool
	scroll int // the first line shown
	// size is what Redis said of the shown lock's value size (a value longer than
	// scanner.ValueCap is read only in part); sizeSeq tags the request in flight.
	size    valueSize
	sizeSeq uint64
	// zoom is the time the timeline shows (timelineZooms); 0 until the zoom key is pressed:
	// the default, a demo's short TTLs want a closer look than a service's.
	zoom time.Duration
	// holder is the cursor among a shared primitive's live holders (shared.go): d releases it.
	holder int
	// together is the search for the other keys of a multi-key lock (shared.go).
	together together
}

// valueSize is one key's value size as Redis reports it: STRLEN for a string, else
// MEMORY USAGE (the key's whole footprint).
type valueSize struct {
	seq    uint64
	key    string
	addr   string // the lock's server (Lock.Addr): of independent servers, each has its own value
	bytes  int64
	memory bool   // MEMORY USAGE rather than STRLEN
	err    string // redacted; "" when bytes is known
}

// valueSizeMsg is the answer of valueSizeCmd.
type valueSizeMsg valueSize

// detailLabelWidth is the width of the field names' column.
const detailLabelWidth = 10

// sizeTimeout bounds the size request of the detail view.
const sizeTimeout = 5 * time.Second

// lines is the whole content of the view for lock l, wrapped to width cells; addrLabel names
// the line of the server holding the key where it is worth one ("master" of a Redis Cluster,
// "server" of independent servers; "" for none). The TTL counts down on the local clock now,
// the age on the server's (clocks), as in the table. jump explains a fence token that jumped
// ("" when it did not). pictures are the lock's timeline and figures (timeline.go).
func (d detailPane) lines(l *scanner.Lock, width int, now time.Time, clocks scanner.Clocks, stuckAfter time.Duration, waiters map[string]int, addrLabel, jump, together string, pictures []string, st styles) []string {
	if l == nil {
		return []string{st.dim.Render("no lock selected")}
	}
	valueW := max(width-detailLabelWidth, 8)
	var lines []string
	// Fields are text as read from Redis, escaped here; styled lines of our own go through
	// addStyled. A long field wraps under its label instead of being cut.
	addStyled := func(name, styled string) {
		for i, part := range wrapCells(styled, valueW) {
			if i > 0 {
				name = ""
			}
			lines = append(lines, st.label.Render(cell(name, detailLabelWidth))+part)
		}
	}
	add := func(name, text string) { addStyled(name, present.SafeText(text, 0)) }
	for _, part := range wrapCells(present.SafeText(l.Key, 0), max(width, 8)) {
		lines = append(lines, st.paneTitle.Render(part))
	}
	format := string(l.Format)
	if l.Type != "" {
		format += " (" + l.Type + ")"
	}
	add("format", format)
	if l.Shared != nil {
		lines = append(lines, d.sharedLines(l, width, now, clocks.Now(l, now), st)...)
	} else {
		add("holder", present.OrUnknown(l.Node))
		add("trace", present.OrUnknown(l.Trace))
	}
	switch {
	case l.Shared != nil: // each holder has its own age and TTL (sharedLines)
	case !l.AcquiredAt.IsZero():
		serverNow := clocks.Now(l, now)
		acq := present.Acquired(l, serverNow)
		if present.Stuck(l, serverNow, stuckAfter) {
			acq += " " + st.stuck.Render(present.FlagStuck.Label())
		}
		addStyled("acquired", acq)
	default:
		add("acquired", present.Unknown)
	}
	switch {
	case present.NeverFrees(l) && l.IsSemaphore():
		addStyled("ttl", st.noExpiry.Render(present.MaybeSemaphoreNoTTL))
	case l.NoExpiry && l.IsSemaphore():
		add("ttl", present.SemaphoreNoTTL)
	case l.NoExpiry:
		addStyled("ttl", st.noExpiry.Render(present.NeverExpires))
	default:
		add("ttl", fmt.Sprintf("%s left (read %s at %s)", present.Duration(l.RemainingAt(now)),
			present.Duration(l.TTL), present.Time(l.FetchedAt)))
	}
	if l.Reentry > 0 {
		add("re-entry", strconv.Itoa(l.Reentry))
	}
	if l.HasFence {
		add("fence", strconv.FormatInt(l.Fence, 10))
		if jump != "" {
			addStyled("", st.jumped.Render(jumpMark+" "+present.SafeText(jump, 0))) // names servers the sentinels announced
		}
	}
	if n, ok := waitersOf(l, waiters); ok && (l.Shared == nil || len(l.Shared.Waiters) == 0) {
		add("waiters", strconv.Itoa(n))
	}
	if together != "" {
		add("together", together)
	}
	if addrLabel != "" && l.Addr != "" {
		add(addrLabel, l.Addr)
	}
	if token := l.Token(); token != "" {
		add("token", token)
	}
	if meta := l.Meta(); meta != "" {
		add("meta", meta)
	}
	for i, o := range l.Owners {
		name := ""
		if i == 0 {
			name = "owners"
		}
		add(name, present.Owner(o))
	}
	if len(pictures) > 0 {
		lines = append(append(append(lines, ""), pictures...), "")
	}
	add("size", d.sizeText(l))
	addStyled("value", present.Value(l, 0)) // escaped by present.Value
	if q := l.Quorum; q != nil {
		lines = append(lines, st.label.Render("instances"))
		for _, in := range q.Instances {
			for _, part := range wrapCells(instanceLine(l, in, st), max(width-2, 8)) {
				lines = append(lines, "  "+part)
			}
		}
		verdict := st.connOK.Render(present.QuorumVerdict(q))
		if !q.Reached {
			verdict = st.connBad.Render(present.QuorumVerdict(q))
		}
		addStyled("quorum", present.QuorumAgreement(q)+": "+verdict)
	}
	return lines
}

// sizeText is the value's size: its length when the whole value was read, else how much of
// it is shown against what Redis reports (the request runs when the view opens).
func (d detailPane) sizeText(l *scanner.Lock) string {
	read := len(l.Value)
	if !l.Truncated {
		return strconv.Itoa(read) + " bytes"
	}
	shown := fmt.Sprintf("showing first %d", read)
	switch {
	case d.size.key != l.Key || d.size.addr != l.Addr:
		return shown + " bytes (reading the size…)"
	case d.size.err != "":
		return shown + " bytes (size unknown: " + d.size.err + ")"
	case d.size.memory:
		return fmt.Sprintf("%s bytes; the key takes %d bytes in memory (MEMORY USAGE)", shown, d.size.bytes)
	}
	return fmt.Sprintf("%s of %d bytes", shown, d.size.bytes)
}

// view is the window of lines the view shows at its scroll position, width x height.
func (d detailPane) view(lines []string, width, height int, st styles) string {
	if height <= 0 {
		return ""
	}
	top := d.clampedScroll(len(lines), height)
	shown := lines[top:min(top+height, len(lines))]
	if top+height < len(lines) && len(shown) > 0 {
		shown[len(shown)-1] = st.dim.Render(fmt.Sprintf("↓ %d more lines (↓/pgdn)", len(lines)-top-height+1))
	}
	return fitBlock(strings.Join(shown, "\n"), width, height)
}

// clampedScroll is the scroll position kept within n lines in a window of height.
func (d detailPane) clampedScroll(n, height int) int {
	return max(min(d.scroll, n-height), 0)
}

// detailLines is the detail view's content for the selected lock at width.
func (m *Model) detailLines(width int) []string {
	addrLabel := ""
	switch m.status.target.Mode {
	case connect.Cluster:
		addrLabel = "master"
	case connect.Independent:
		addrLabel = "server"
	}
	l := m.selected()
	jump := ""
	if l != nil {
		if j, ok := m.jumpOf(l); ok {
			jump = j.text()
		}
	}
	var pictures []string
	if l != nil {
		v := timelineView{now: m.now, span: m.timelineSpan(), width: width, st: m.st}
		pictures = timelineLines(m.history.of(m.table.selKey), v)
	}
	together := ""
	if l != nil {
		together, _ = m.detail.togetherText(l, m.locks.id(l))
	}
	return m.detail.lines(l, width, m.now, m.status.clocks, m.stuckAfter, m.waiters, addrLabel, jump, together, pictures, m.st)
}

// timelineSpan is the time the detail view's timeline shows: the zoom chosen, else 15 seconds
// in a demo (TTLs of a few seconds) and a minute elsewhere.
func (m *Model) timelineSpan() time.Duration {
	switch {
	case m.detail.zoom > 0:
		return m.detail.zoom
	case m.demo != nil:
		return timelineZooms[0]
	}
	return timelineZooms[1]
}

// zoomTimeline shows the next span of time in timelineZooms, from the widest back to the
// closest.
func (m *Model) zoomTimeline() {
	i := slices.Index(timelineZooms, m.timelineSpan())
	m.detail.zoom = timelineZooms[(i+1)%len(timelineZooms)]
}

// openDetail shows the selected lock's details from the top; a value read only in part gets
// its real size asked of Redis.
func (m *Model) openDetail() tea.Cmd {
	m.detail.open, m.detail.scroll, m.detail.holder = true, 0, 0
	l := m.selected()
	if l != nil && m.history.of(m.table.selKey) == nil {
		m.startHistory(m.table.selKey, l) // not on screen long enough to be tracked yet
	}
	return tea.Batch(m.findTogether(l), m.readSize(l))
}

// findTogether starts the search for the keys taken together with l (a multi-key lock's
// others), when l may be one.
func (m *Model) findTogether(l *scanner.Lock) tea.Cmd {
	if !mayBeMulti(l) {
		return nil
	}
	m.detail.together = together{seq: m.detail.together.seq + 1, id: m.locks.id(l), value: l.Value}
	return togetherCmd(m.locks.snapshot(), m.detail.together.seq, m.detail.together.id, l.Key, l.Value)
}

// readSize asks Redis for the size of l's value when the census read only its start.
func (m *Model) readSize(l *scanner.Lock) tea.Cmd {
	if l == nil || !l.Truncated {
		return nil
	}
	m.detail.sizeSeq++
	m.detail.size = valueSize{}
	target := m.status.target
	if one, ok := target.On(l.Addr); ok && target.Mode == connect.Independent {
		target = one // the lock's own server: another's value under the key is another lock
	}
	if len(target.Clients) == 0 {
		return nil
	}
	return valueSizeCmd(m.ctx, target.Clients, l, m.detail.sizeSeq)
}

// onValueSize keeps the size answer of the latest request only.
func (m *Model) onValueSize(msg valueSizeMsg) {
	if msg.seq != m.detail.sizeSeq {
		return
	}
	msg.err = m.redact(msg.err)
	m.detail.size = valueSize(msg)
}

// valueSizeCmd asks the servers in turn (a Redlock set's instances) for key's value size:
// STRLEN of a string, else MEMORY USAGE.
func valueSizeCmd(ctx context.Context, clients []redis.UniversalClient, l *scanner.Lock, seq uint64) tea.Cmd {
	key, typ := l.Key, l.Type
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
		defer cancel()
		msg := valueSizeMsg{seq: seq, key: key, addr: l.Addr, memory: typ != "string"}
		var err error
		for _, c := range clients {
			var n int64
			if msg.memory {
				n, err = c.MemoryUsage(ctx, key).Result()
			} else {
				n, err = c.StrLen(ctx, key).Result()
			}
			if err == nil {
				msg.bytes = n
				return msg
			}
		}
		if errors.Is(err, redis.Nil) {
			err = errors.New("the key is gone")
		}
		msg.err = err.Error()
		return msg
	}
}

// onDetailKey handles a key while the detail view is open: the movement keys scroll it, c
// and v copy the key and the value, enter and esc close it; the actions, the help and quit
// work as over the table.
func (m *Model) onDetailKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	page := max(m.layout().bodyRows-3, 1)
	switch {
	case key.Matches(msg, k.Detail, k.ClearFilter):
		m.detail.open = false
	case key.Matches(msg, k.Up):
		m.scrollDetail(-1)
	case key.Matches(msg, k.Down):
		m.scrollDetail(1)
	case key.Matches(msg, k.PageUp):
		m.scrollDetail(-page)
	case key.Matches(msg, k.PageDown):
		m.scrollDetail(page)
	case key.Matches(msg, k.Zoom):
		m.zoomTimeline()
	case key.Matches(msg, k.Top):
		m.detail.scroll = 0
	case key.Matches(msg, k.Bottom):
		m.scrollDetailTo(math.MaxInt)
	case key.Matches(msg, k.CopyKey, k.CopyValue):
		return m.copySelected(key.Matches(msg, k.CopyValue))
	case key.Matches(msg, k.NextHolder):
		m.detail.moveHolder(m.selected(), 1)
	case key.Matches(msg, k.PrevHolder):
		m.detail.moveHolder(m.selected(), -1)
	case key.Matches(msg, k.ReleaseTogether):
		m.openTogetherDialog()
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case m.onActionKey(msg):
	}
	return nil
}

// scrollDetail moves the detail view by n lines, within its content.
func (m *Model) scrollDetail(n int) { m.scrollDetailTo(m.detail.scroll + n) }

// scrollDetailTo puts line top of the content at the top of the detail view, or as near as
// the content allows.
func (m *Model) scrollDetailTo(top int) {
	height := max(m.layout().bodyRows-2, 1)
	m.detail.scroll = detailPane{scroll: top}.clampedScroll(len(m.detailLines(m.width-2)), height)
}

// copySelected puts the selected lock's key, or its value as read, in the form lockscope
// prints them (present.Escape: binary bytes as \xNN) on the terminal's
// clipboard with OSC 52 (it reaches the local clipboard over SSH and through tmux with
// set-clipboard on) and says so in the footer.
// clipboardCap is the longest text sent in one OSC 52 sequence: its base64 form then fits the
// 100 000 bytes hterm (Chrome OS, many SSH web clients) takes, and other terminals drop or
// choke on longer ones. A value is read up to 4 KiB (escaped at most 16 KiB); a key has no bound.
const clipboardCap = 74_994

func (m *Model) copySelected(value bool) tea.Cmd {
	l := m.selected()
	if l == nil {
		m.setNotice("no lock selected: nothing copied", true)
		return nil
	}
	if !value {
		return m.copyText("the key "+l.Key, "the key", present.Escape(l.Key)) // the form every command takes back
	}
	what := "the value of " + l.Key
	if l.Truncated {
		what = fmt.Sprintf("the first %d bytes of the value of %s", len(l.Value), l.Key)
	}
	return m.copyText(what, "the value", present.Escape(l.Value))
}

// copyText puts text on the clipboard and names it in the footer with what, or says why it
// did not, naming it with noun only (a key too long to copy is too long to name).
func (m *Model) copyText(what, noun, text string) tea.Cmd {
	if len(text) > clipboardCap {
		m.setNotice(fmt.Sprintf("not copied: %s is %d bytes, more than the %d a terminal's clipboard (OSC 52) takes; "+
			"lockscope ls --json prints it", noun, len(text), clipboardCap), true)
		return nil
	}
	m.setNotice("copied "+what+" to the clipboard (OSC 52)", false)
	return tea.SetClipboard(text)
}

// instanceLine is one server's state of the key; it escapes the address and value it shows.
func instanceLine(l *scanner.Lock, in scanner.Instance, st styles) string {
	var state, ttl string
	switch {
	case in.Missing:
		state = st.connBad.Render("? unreadable")
	case !in.Present:
		state = st.dim.Render("- absent")
	case in.Value == l.Value:
		state = st.connOK.Render("✓ agrees")
	default:
		state = st.warning.Render("≠ other holder")
	}
	if in.Present {
		ttl = present.InstanceTTL(in)
	}
	return fmt.Sprintf("%s  %s %s  %s", present.SafeText(in.Addr, 0), padRight(state, 14), cellRight(ttl, 6), present.SafeText(in.Value, 0))
}

// wrapCells wraps a styled line into lines of at most width cells, at spaces where it can.
func wrapCells(s string, width int) []string {
	if s == "" {
		return []string{present.Unknown}
	}
	return strings.Split(ansi.Wrap(s, width, ""), "\n")
}
