package ui

import (
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// lockTable is the scrolling list of locks. It keeps only a cursor and a window offset: the
// rows themselves live in the view index, and View renders only the window's rows, so the
// frame cost does not depend on how many locks there are.
type lockTable struct {
	cursor int    // index of the selected row in the view index
	offset int    // index of the first visible row
	height int    // visible rows (without the header)
	selKey string // key of the selected row: the selection follows the key across rebuilds
}

// rowContext is what rendering a row needs besides the lock.
type rowContext struct {
	now        time.Time
	clocks     scanner.Clocks  // the servers' clocks: ages are measured on them
	late       map[string]bool // servers that stopped answering: their rows are dimmed
	stuckAfter time.Duration
	waiters    map[string]int // waiter counts learnt from events, by key
	span       func(*scanner.Lock) time.Duration
	// jumped says a lock's fence token jumped (fencejump.go): FENCE shows it with jumpMark.
	jumped   func(*scanner.Lock) bool
	byServer bool // independent servers: rows are found by server and key, and show SERVER
	st       styles
}

// jumpMark prefixes a fence token that jumped.
const jumpMark = "⇡"

// setHeight sets the number of visible rows and keeps the cursor on screen.
func (t *lockTable) setHeight(h int, v viewIndex) {
	t.height = max(h, 0)
	t.clamp(v)
}

// moveBy moves the cursor n rows (negative: up).
func (t *lockTable) moveBy(n int, v viewIndex) {
	t.cursor += n
	t.moved(v)
}

// moveTo puts the cursor on row i.
func (t *lockTable) moveTo(i int, v viewIndex) {
	t.cursor = i
	t.moved(v)
}

// scrollBy moves the window (mouse wheel), dragging the cursor along when it would leave it.
func (t *lockTable) scrollBy(n int, v viewIndex) {
	t.offset = min(max(t.offset+n, 0), max(v.len()-t.height, 0))
	if t.cursor < t.offset {
		t.cursor = t.offset
	}
	if t.height > 0 && t.cursor >= t.offset+t.height {
		t.cursor = t.offset + t.height - 1
	}
	t.moved(v)
}

// follow re-finds the selected key after a rebuild: at index i when known, else it keeps the
// cursor position.
func (t *lockTable) follow(i int, v viewIndex) {
	if i >= 0 {
		t.cursor = i
	}
	t.clamp(v)
}

// clamp keeps cursor and window inside the rows and the cursor inside the window.
func (t *lockTable) clamp(v viewIndex) {
	n := v.len()
	t.cursor = min(max(t.cursor, 0), max(n-1, 0))
	if t.height > 0 {
		if t.cursor < t.offset {
			t.offset = t.cursor
		}
		if t.cursor >= t.offset+t.height {
			t.offset = t.cursor - t.height + 1
		}
	}
	t.offset = min(max(t.offset, 0), max(n-t.height, 0))
	// On a row a partial view has not ranked yet, the selection stays on its lock, for the
	// full build to place; a move by the user lets go of it first (moved).
	if key := v.key(t.cursor); key != "" || v.unranked == 0 {
		t.selKey = key
	}
}

// moved is the end of a move by the user: the selection is the row the cursor is on.
func (t *lockTable) moved(v viewIndex) {
	t.selKey = ""
	t.clamp(v)
}

// visible is the keys of the window of rows on screen, "" for a row not ranked yet.
func (t lockTable) visible(v viewIndex) []string {
	end := min(t.offset+t.height, v.len())
	if t.offset >= end {
		return nil
	}
	keys := make([]string, end-t.offset)
	for i := range keys {
		keys[i] = v.key(t.offset + i)
	}
	return keys
}

// Fixed column widths.
const (
	flagWidth = 2 // "!" stuck, "∞" no expiry
	ageWidth  = 7
	ttlWidth  = len(present.Expired) // the widest TTL word; durations take at most 6
	barWidth  = 6
	reWidth   = 3
	minFence  = 5  // "FENCE"; wider when the visible tokens need it
	maxFence  = 20 // any int64, with jumpMark
	waitWidth = 3
	fmtWidth  = 10
	minKey    = 8
	minHolder = 6
	minTrace  = 6
)

// layoutColumns decides which columns fit in width and how wide the flexible ones are,
// from the widths of the visible rows' content. Columns are dropped from the least useful
// (format) to the most (key, TTL) as the terminal narrows.
type tableColumns struct {
	server                              int // SERVER's width; 0: not shown (one deployment)
	key, holder, trace, fenceW          int
	age, ttl, bar, re, fence, wait, fmt bool
}

// layoutColumns lays the columns out for the visible rows vis (see tableColumns); FENCE makes
// room for jumpMark on the rows jumped says. With servers (independent servers) SERVER comes
// first, as wide as the visible addresses: the same key on two servers is two locks, and only
// it tells their rows apart.
func layoutColumns(width int, vis []*scanner.Lock, servers bool, jumped func(*scanner.Lock) bool) tableColumns {
	c := tableColumns{age: true, ttl: true, bar: true, re: true, fence: true, wait: true, fmt: true}
	if servers {
		c.server = len(present.ColumnServer)
		for _, l := range vis {
			c.server = max(c.server, len(l.Addr))
		}
	}
	wantKey, wantHolder, wantTrace := len("KEY")+1, len("HOLDER")+1, len("TRACE")
	c.fenceW = minFence
	for _, l := range vis {
		wantKey = max(wantKey, len(l.Key))
		wantHolder = max(wantHolder, len(present.HolderText(l)))
		wantTrace = max(wantTrace, len(l.Trace))
		if l.HasFence {
			w := len(strconv.FormatInt(l.Fence, 10))
			if jumped(l) {
				w++
			}
			c.fenceW = min(max(c.fenceW, w), maxFence)
		}
	}
	// The key matters most: optional columns go before it is cut below keyGoal.
	keyGoal := min(wantKey, maxKeyGoal)
	holder, trace := min(wantHolder, minHolder), min(wantTrace, minTrace)
	flex := func() int { return width - c.fixedWidth() }
	for _, d := range []*bool{&c.fmt, &c.wait, &c.fence, &c.re, &c.bar} {
		if flex()-holder-trace-2 >= keyGoal {
			break
		}
		*d = false
	}
	showTrace, showHolder := true, true
	if flex()-holder-trace-2 < minKey {
		showTrace = false
	}
	if !showTrace && flex()-holder-1 < minKey {
		showHolder = false
	}
	if !showHolder && flex() < minKey {
		c.age = false
	}
	f := max(flex(), 1)
	switch {
	case !showHolder:
		c.key = f
	case !showTrace:
		avail := f - 1
		c.holder = holderWidth(avail, wantKey, wantHolder, 0)
		c.key = avail - c.holder
	default:
		// The width policy: KEY gets its share (or its longest value), HOLDER what it wants
		// of the rest, TRACE what is left after that; all that nobody wants goes to KEY.
		avail := f - 2
		c.holder = holderWidth(avail, wantKey, wantHolder, trace)
		c.trace = max(min(wantTrace, avail-keyShare(avail, wantKey)-c.holder), trace)
		c.key = avail - c.holder - c.trace
	}
	return c
}

// keySharePercent is the most of the flexible columns' width KEY takes while HOLDER or TRACE
// want more: long keys do not push the holder, what an on-call engineer looks for, off the
// screen.
const keySharePercent = 40

// keyShare is KEY's width before the other flexible columns have theirs: its longest value,
// at most keySharePercent of avail, at least minKey.
func keyShare(avail, wantKey int) int {
	return min(wantKey, max(avail*keySharePercent/100, minKey))
}

// holderWidth is HOLDER's width out of avail: what its longest value wants of what KEY's
// share and TRACE's reserve leave, at least its minimum.
func holderWidth(avail, wantKey, wantHolder, traceReserve int) int {
	return max(min(wantHolder, avail-keyShare(avail, wantKey)-traceReserve), min(wantHolder, minHolder))
}

// maxKeyGoal is the key width the layout protects before it keeps optional columns.
const maxKeyGoal = 28

// fixedWidth is the width of the fixed columns shown, separators included.
func (c tableColumns) fixedWidth() int {
	w := flagWidth
	if c.server > 0 {
		w += c.server + 1
	}
	for _, on := range []struct {
		b bool
		w int
	}{{c.age, ageWidth}, {c.ttl, ttlWidth}, {c.bar, barWidth}, {c.re, reWidth}, {c.fence, c.fenceW}, {c.wait, waitWidth}, {c.fmt, fmtWidth}} {
		if on.b {
			w += on.w + 1
		}
	}
	return w
}

// header renders the column titles with the sort indicator.
func (c tableColumns) header(sort present.Sort, desc bool) string {
	arrow := "↑"
	if desc {
		arrow = "↓"
	}
	mark := func(title string) string {
		if sort.Column() == title {
			return title + arrow
		}
		return title
	}
	var sb strings.Builder
	sb.WriteString(strings.Repeat(" ", flagWidth))
	if c.server > 0 {
		sb.WriteString(cell(present.ColumnServer, c.server) + " ")
	}
	sb.WriteString(cell(mark(present.ColumnKey), c.key))
	if c.holder > 0 {
		sb.WriteString(" " + cell(mark(present.ColumnHolder), c.holder))
	}
	if c.trace > 0 {
		sb.WriteString(" " + cell(mark(present.ColumnTrace), c.trace))
	}
	if c.age {
		sb.WriteString(" " + cellRight(mark(present.ColumnAge), ageWidth))
	}
	if c.ttl {
		sb.WriteString(" " + cellRight(mark(present.ColumnTTL), ttlWidth))
	}
	if c.bar {
		sb.WriteString(" " + strings.Repeat(" ", barWidth))
	}
	if c.re {
		sb.WriteString(" " + cellRight(present.ColumnReentry, reWidth))
	}
	if c.fence {
		sb.WriteString(" " + cellRight(present.ColumnFence, c.fenceW))
	}
	if c.wait {
		sb.WriteString(" " + cellRight(present.ColumnWaiters, waitWidth))
	}
	if c.fmt {
		sb.WriteString(" " + cell(present.ColumnFormat, fmtWidth))
	}
	return sb.String()
}

// row renders one lock. The selected row, and a row from a server that stopped answering
// (dimmed whole: its figures are old), are drawn without inner colours so that their style runs
// unbroken across the line. The TTL counts down on the local clock (FetchedAt + TTL), the age
// on the server's.
func (c tableColumns) row(l *scanner.Lock, selected bool, rc rowContext) string {
	st := rc.st
	late := lateRow(l, rc.late)
	plain := selected || late
	paint := func(s string, style lipgloss.Style) string {
		if plain {
			return s
		}
		return style.Render(s)
	}
	serverNow := rc.clocks.Now(l, rc.now)
	stuck := present.Stuck(l, serverNow, rc.stuckAfter)
	flag := [2]string{" ", " "}
	if stuck {
		flag[0] = paint(present.FlagStuck.Mark(), st.stuck)
	}
	if present.NeverFrees(l) {
		flag[1] = paint(present.FlagNoExpiry.Mark(), st.noExpiry)
	}

	var sb strings.Builder
	sb.WriteString(flag[0] + flag[1])
	if c.server > 0 {
		sb.WriteString(cell(l.Addr, c.server) + " ")
	}
	sb.WriteString(cell(l.Key, c.key))
	if c.holder > 0 {
		sb.WriteString(" " + holderCell(present.HolderText(l), c.holder))
	}
	if c.trace > 0 {
		sb.WriteString(" " + cell(present.OrUnknown(l.Trace), c.trace))
	}
	if c.age {
		age := cellRight(present.Age(l, serverNow), ageWidth)
		switch {
		case stuck:
			age = paint(age, st.stuck)
		case present.Skew(l, serverNow) > 0:
			age = paint(age, st.warning)
		}
		sb.WriteString(" " + age)
	}
	if c.ttl {
		ttl := present.TTL(l, rc.now)
		switch {
		case !present.NeverFrees(l) && ttl == present.Never: // another type of key: no lock's flag
			ttl = cellRight(ttl, ttlWidth)
		case ttl == present.Never:
			ttl = paint(cellRight(ttl, ttlWidth), st.noExpiry)
		case ttl == present.Expired:
			ttl = paint(cellRight(ttl, ttlWidth), st.dim)
		default:
			ttl = cellRight(ttl, ttlWidth)
		}
		sb.WriteString(" " + ttl)
	}
	if c.bar {
		sb.WriteString(" " + ttlBarCell(l, l.RemainingAt(rc.now), rc.span(l), plain, st))
	}
	if c.re {
		sb.WriteString(" " + cellRight(present.Ordinal(int64(l.Reentry), l.Reentry > 0), reWidth))
	}
	if c.fence {
		fence := cellRight(present.Ordinal(l.Fence, l.HasFence), c.fenceW)
		if l.HasFence && rc.jumped(l) { // layoutColumns left room for the mark
			token := strconv.FormatInt(l.Fence, 10)
			fence = strings.Repeat(" ", max(c.fenceW-1-len(token), 0)) + paint(jumpMark, st.jumped) + token
		}
		sb.WriteString(" " + fence)
	}
	if c.wait {
		n, ok := waitersOf(l, rc.waiters)
		sb.WriteString(" " + cellRight(present.Ordinal(int64(n), ok), waitWidth))
	}
	if c.fmt {
		f := cell(string(l.Format), fmtWidth)
		if l.Format == scanner.FormatNotALock || l.Format == scanner.FormatUnknown {
			f = paint(f, st.dim)
		}
		sb.WriteString(" " + f)
	}
	line := sb.String()
	switch {
	case selected:
		return st.selected.Render(line)
	case late:
		return st.late.Render(line)
	}
	return line
}

// holderCell fits a HOLDER text into width cells as cell does, except that a shared lock's
// holder named with its mode ("6841f7a9-…:67 (write)", present.HolderText) keeps the mode and
// loses the end of the name: the mode is what tells a writer from a lock's holder.
func holderCell(text string, width int) string {
	at := strings.LastIndex(text, " (")
	if at < 0 || !strings.HasSuffix(text, ")") || len(text) <= width || width < len(text)-at+2 {
		return cell(text, width)
	}
	mode := text[at:]
	return cell(text[:at], width-len(mode)) + present.SafeText(mode, 0)
}

// ttlBarCell is the TTL bar: the fraction of the lock's TTL left, against the longest TTL seen
// for its holder (see lockSet.span).
func ttlBarCell(l *scanner.Lock, remaining, span time.Duration, plain bool, st styles) string {
	switch {
	case l.NoExpiry && !present.NeverFrees(l): // another type of key: no bar
		return strings.Repeat(" ", barWidth)
	case l.NoExpiry:
		if plain {
			return strings.Repeat("∞", barWidth)
		}
		return st.noExpiry.Render(strings.Repeat("∞", barWidth))
	case span <= 0:
		return strings.Repeat(" ", barWidth)
	}
	frac := float64(remaining) / float64(span)
	if plain {
		filled, rest := barGlyphs(frac, barWidth)
		return filled + rest
	}
	return st.ttlBar(frac, barWidth)
}

// waitersOf is the lock's waiter count: the scanner's when it could read the queue, else the
// newest count an event reported.
func waitersOf(l *scanner.Lock, fromEvents map[string]int) (int, bool) {
	if l.HasWaiters {
		return l.Waiters, true
	}
	n, ok := fromEvents[l.Key]
	return n, ok
}

// view renders the header and the visible rows, looking each row's newest record up by key
// (the index may be a rebuild behind the census: a key removed since shows as gone).
func (t lockTable) view(v viewIndex, latest func(string) *scanner.Lock, width int, q viewQuery, rc rowContext) string {
	vis := t.visible(v)
	fresh := make([]*scanner.Lock, len(vis)) // nil: not ranked yet
	known := make([]*scanner.Lock, 0, len(vis))
	for i, key := range vis {
		if key == "" {
			continue
		}
		if fresh[i] = latest(key); fresh[i] == nil {
			fresh[i] = goneLock(key, rc.byServer)
		}
		known = append(known, fresh[i])
	}
	cols := layoutColumns(width, known, rc.byServer, rc.jumped)
	lines := make([]string, 0, t.height+1)
	lines = append(lines, rc.st.header.Render(fitLine(cols.header(q.sort, q.desc), width)))
	for i, l := range fresh {
		switch {
		case l != nil:
			lines = append(lines, fitLine(cols.row(l, t.offset+i == t.cursor, rc), width))
		case i == 0 || fresh[i-1] != nil: // one line for the rows the full build will bring
			lines = append(lines, rc.st.dim.Render(fitLine("  sorting…", width)))
		}
	}
	return strings.Join(lines, "\n")
}
