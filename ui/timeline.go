package ui

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/present"
)

// The pictures of one lock's recent past in the detail view, drawn from its history
// (history.go): a row for the lock (held, gaps, overlaps), a lane per holder, the time axis,
// a sparkline of its waiters and the distribution of its hold times.

// timelineZooms are the spans of time the pictures show, cycled by the zoom key.
var timelineZooms = []time.Duration{15 * time.Second, time.Minute, historyWindow}

// Timeline glyphs. A lane's cell is split in halves, so a hand-off inside a cell reads as the
// end of one lane (▌) and the start of the next (▐), not as two holders at once.
const (
	glyphHeld      = "█"
	glyphHeldLeft  = "▌"
	glyphHeldRight = "▐"
	glyphSilent    = "░" // held in Redis by a holder that crashed: nobody alive holds it until it expires
	glyphSection   = "▒" // a demo worker in its critical section without the lock in Redis
	glyphOverlap   = "!" // two holders at once, on the lock's row
	glyphEmpty     = " "
)

// markGlyphs draw the marks, in the holder's lane.
var markGlyphs = map[markKind]string{markPause: "‖", markLost: "↯", markCrash: "✕", markStale: "⊘"}

// markNames name the marks in the legend.
var markNames = map[markKind]string{markPause: "paused", markLost: "lost", markCrash: "crashed", markStale: "stale write refused"}

// timelineLanes is how many holders get a lane; the others share the last one.
const timelineLanes = 8

// overlapSlack is how far apart two sources' clocks may put a hand-off: a section seen within
// it of the start or end of another holder's holding is not an overlap.
const overlapSlack = 10 * time.Millisecond

// overlapSettle is how long before now an overlap is not drawn yet: the demo's snapshots come
// in ahead of the events and census reads of the same moment (a release, an acquisition).
const overlapSettle = 500 * time.Millisecond

// timelineView is what the pictures need besides the history.
type timelineView struct {
	now   time.Time
	span  time.Duration // the time shown, ending at now
	width int
	st    styles
}

// cellState is one cell of a lane (or of the lock's row).
type cellState struct {
	left, right bool // held in Redis during the cell's first, second half
	silent      bool
	section     bool
	overlap     bool
	mark        *markKind
}

// timelineLines draws the pictures of k (nil: nothing recorded yet) in v.width cells per line.
func timelineLines(k *keyHistory, v timelineView) []string {
	st := v.st
	if k == nil || len(k.spans) == 0 && len(k.waiters) == 0 {
		return []string{st.dim.Render(present.SafeText("no history yet: recorded from now on", 0))}
	}
	labelW := timelineLabelWidth(v.width)
	cells := v.width - labelW
	if cells < 4 {
		return []string{st.dim.Render(cell("too narrow for the timeline", v.width))}
	}
	start := v.now.Add(-v.span)
	col := func(t time.Time) float64 { return float64(t.Sub(start)) / float64(v.span) * float64(cells) }

	holders, lane := timelineHolders(k, start, v.now)
	lanes := make([][]cellState, len(holders))
	for i := range lanes {
		lanes[i] = make([]cellState, cells)
	}
	lockRow := make([]cellState, cells)
	for i := range k.spans {
		s := &k.spans[i]
		to := s.until(v.now)
		if to.Before(start) || s.from.After(v.now) {
			continue
		}
		cs := lanes[lane[s.holder]]
		a, b := col(s.from), col(to)
		for c := max(int(a), 0); c < cells && float64(c) <= b; c++ {
			if s.section {
				cs[c].section = true
				continue
			}
			silentFrom := math.Inf(1)
			if !s.silent.IsZero() {
				silentFrom = col(s.silent)
			}
			for _, row := range [][]cellState{cs, lockRow} {
				switch {
				case float64(c) >= silentFrom:
					row[c].silent = true
				default:
					row[c].left = row[c].left || covers(a, min(b, silentFrom), float64(c), float64(c)+0.5)
					row[c].right = row[c].right || covers(a, min(b, silentFrom), float64(c)+0.5, float64(c+1))
				}
			}
		}
	}
	for _, iv := range overlaps(k, v.now) {
		a, b := col(iv[0]), col(iv[1])
		for c := max(int(a), 0); c < cells && float64(c) <= b; c++ {
			lockRow[c].overlap = true
			for _, cs := range lanes {
				cs[c].overlap = true
			}
		}
	}
	for i := range k.marks {
		m := &k.marks[i]
		if c := int(col(m.at)); c >= 0 && c < cells && !m.at.After(v.now) {
			if cs := lanes[lane[m.holder]]; cs[c].mark == nil || *cs[c].mark < m.kind {
				cs[c].mark = &m.kind
			}
		}
	}

	drawn := map[string]bool{}
	lines := []string{"", st.label.Render(timelineLabel("lock", labelW)) + drawCells(lockRow, true, drawn, st)}
	for i, h := range holders {
		lines = append(lines, st.label.Render(laneLabel(h, labelW))+drawCells(lanes[i], false, drawn, st))
	}
	lines[0] = timelineLegend(drawn, v)
	lines = append(lines, strings.Repeat(" ", labelW)+st.dim.Render(timeAxis(v.span, cells)))
	spark, peak := waitersLine(k, start, v.now, cells, st)
	lines = append(lines, st.label.Render(timelineLabel(waitersLabel(peak, labelW-1), labelW))+spark)
	lines = append(lines, holdsLines(k, start, v, st)...)
	for i := range lines {
		lines[i] = fitLine(lines[i], v.width) // the words under the picture, at narrow widths
	}
	return lines
}

// covers says whether [a, b] covers any of [lo, hi).
func covers(a, b, lo, hi float64) bool { return a < hi && b >= lo }

// timelineHolders are the holders with something in the time shown, in order of their first
// appearance, and each holder's lane: the first timelineLanes-1 their own, the rest the last.
func timelineHolders(k *keyHistory, start, now time.Time) ([]string, map[string]int) {
	var holders []string
	lane := map[string]int{}
	add := func(h string) {
		if _, ok := lane[h]; ok {
			return
		}
		if len(holders) == timelineLanes-1 && !slices.Contains(holders, "others") {
			holders = append(holders, "others")
		}
		if len(holders) == timelineLanes {
			lane[h] = timelineLanes - 1
			return
		}
		lane[h] = len(holders)
		holders = append(holders, h)
	}
	for _, s := range k.spans {
		if !s.until(now).Before(start) {
			add(s.holder)
		}
	}
	for _, m := range k.marks {
		if !m.at.Before(start) {
			add(m.holder)
		}
	}
	if len(holders) == timelineLanes && holders[timelineLanes-1] == "others" {
		// Exactly enough holders: the last one needs no shared lane.
		for h, i := range lane {
			if i == timelineLanes-1 {
				holders[i] = h
			}
		}
	}
	return holders, lane
}

// timelineLabelWidth is the width of the rows' names, the space after them included.
func timelineLabelWidth(width int) int { return min(detailLabelWidth, max(width/5, 4)) }

// timelineLabel is a row's name in width cells, the last one a space.
func timelineLabel(name string, width int) string { return cell(name, width-1) + " " }

// laneLabel is a holder's name in width cells, the last one a space: its end, which tells
// workers apart (demo-w1, demo-w2), when it is too long.
func laneLabel(h string, width int) string {
	h = present.SafeText(h, 0)
	if lipgloss.Width(h) < width {
		return cell(h, width)
	}
	r := []rune(h)
	return timelineLabel("…"+string(r[max(len(r)-(width-2), 0):]), width)
}

// drawCells draws one row of the timeline, noting the glyphs it drew in drawn; lockRow marks
// overlaps with their own glyph.
func drawCells(cells []cellState, lockRow bool, drawn map[string]bool, st styles) string {
	var b strings.Builder
	for _, c := range cells {
		glyph, style := glyphEmpty, st.timelineHeld
		switch {
		case c.mark != nil:
			glyph, style = markGlyphs[*c.mark], st.timelineMark(*c.mark)
		case lockRow && c.overlap:
			glyph, style = glyphOverlap, st.timelineOverlap
		case c.left && c.right:
			glyph = glyphHeld
		case c.left:
			glyph = glyphHeldLeft
		case c.right:
			glyph = glyphHeldRight
		case c.silent:
			glyph, style = glyphSilent, st.timelineSilent
		case c.section:
			glyph, style = glyphSection, st.timelineSection
		}
		if c.overlap && glyph != glyphEmpty && c.mark == nil {
			style = st.timelineOverlap
		}
		if glyph == glyphHeldLeft || glyph == glyphHeldRight {
			drawn[glyphHeld] = true
		} else {
			drawn[glyph] = true
		}
		b.WriteString(style.Render(glyph))
	}
	return b.String()
}

// timelineLegend names the time shown and the glyphs the picture drew, no others.
func timelineLegend(drawn map[string]bool, v timelineView) string {
	parts := []string{v.st.paneTitle.Render("last " + spanText(v.span))}
	for _, g := range []struct{ glyph, name string }{
		{glyphHeld, "held"}, {glyphSilent, "crashed holder's lock until expiry"},
		{glyphSection, "working without the lock"}, {glyphOverlap, "overlap"},
		{markGlyphs[markPause], markNames[markPause]}, {markGlyphs[markLost], markNames[markLost]},
		{markGlyphs[markCrash], markNames[markCrash]}, {markGlyphs[markStale], markNames[markStale]},
	} {
		if drawn[g.glyph] {
			parts = append(parts, g.glyph+" "+g.name)
		}
	}
	return fitLine(strings.Join(parts, "  "), v.width)
}

// spanText is a span of time as the timeline names it: 15s, 1m, 5m.
func spanText(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return present.Duration(d)
}

// timeAxis is the axis under the lanes: the start, the middle and now, as far as they fit.
func timeAxis(span time.Duration, cells int) string {
	axis := []rune(strings.Repeat(" ", cells))
	put := func(at int, label string) {
		r := []rune(label)
		at = max(0, min(at, cells-len(r)))
		copy(axis[at:], r)
	}
	left := "-" + spanText(span)
	put(0, left)
	if mid := "-" + spanText(span/2); cells >= 3*len(left)+4 {
		put(cells/2-len(mid)/2, mid)
	}
	put(cells, "now")
	return string(axis)
}

// waitersLine is the waiters sparkline over the time shown, and the largest count in it (-1:
// none known). A
// count holds until the next one: a column shows the largest count it saw, including the one
// it started with.
func waitersLine(k *keyHistory, start, now time.Time, cells int, st styles) (string, int) {
	if len(k.waiters) == 0 {
		return st.dim.Render("none seen"), -1
	}
	values := make([]float64, cells)
	last := math.NaN() // no count known yet
	i := 0
	for ; i < len(k.waiters) && k.waiters[i].at.Before(start); i++ {
		last = float64(k.waiters[i].n)
	}
	peak := 0.0
	for c := range values {
		colEnd := start.Add(time.Duration(float64(now.Sub(start)) * float64(c+1) / float64(cells)))
		best := last
		if c == cells-1 {
			colEnd = now.Add(1) // the last column ends with now, included
		}
		for ; i < len(k.waiters) && k.waiters[i].at.Before(colEnd); i++ {
			last = float64(k.waiters[i].n)
			best = math.Max(nanTo(best, 0), last)
		}
		values[c] = best
		peak = math.Max(peak, nanTo(best, 0))
	}
	return st.timelineSpark.Render(sparkline(values, cells, 0)), int(peak)
}

// waitersLabel names the waiters row with the largest count on it, as far as width allows.
func waitersLabel(peak, width int) string {
	if peak < 0 {
		return "waiters"
	}
	if long := "waiters " + strconv.Itoa(peak); len(long) <= width {
		return long
	}
	return "w" + strconv.Itoa(peak)
}

// nearestRank is the p-quantile of sorted (0 < p <= 1) by the nearest-rank method: the
// smallest value at least a share p of the values are at or below.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	return sorted[max(int(math.Ceil(p*float64(len(sorted))))-1, 0)]
}

func nanTo(v, or float64) float64 {
	if math.IsNaN(v) {
		return or
	}
	return v
}

// holdsLines is the distribution of the hold times that ended in the time shown: a
// histogram on a log scale from the shortest to the longest, and p50, p90, max.
func holdsLines(k *keyHistory, start time.Time, v timelineView, st styles) []string {
	var holds []time.Duration
	for _, s := range k.spans {
		if !s.section && !s.open() && !s.to.Before(start) {
			holds = append(holds, s.to.Sub(s.from))
		}
	}
	label := st.label.Render(timelineLabel("holds", timelineLabelWidth(v.width)))
	if len(holds) == 0 {
		return []string{label + st.dim.Render("none ended")}
	}
	slices.Sort(holds)
	q := func(p float64) time.Duration { return nearestRank(holds, p) }
	lo, hi := holds[0], holds[len(holds)-1]
	var parts []string
	if len(holds) >= histogramMin && lo < hi {
		counts := make([]float64, histogramBuckets)
		for _, d := range holds {
			counts[logBucket(d, lo, hi, histogramBuckets)]++
		}
		parts = append(parts, st.timelineSpark.Render(sparkline(counts, histogramBuckets, 0))+" "+present.Duration(lo)+"–"+present.Duration(hi))
	}
	parts = append(parts, "p50 "+present.Duration(q(0.5)), "p90 "+present.Duration(q(0.9)), "max "+present.Duration(hi),
		st.dim.Render(strconv.Itoa(len(holds))+" held"))
	labelW := lipgloss.Width(label)
	var lines []string
	for i, ln := range flow(v.width-labelW, parts...) {
		if i > 0 {
			label = strings.Repeat(" ", labelW)
		}
		lines = append(lines, label+ln)
	}
	return lines
}

// The hold-time histogram: histogramBuckets bars, drawn from histogramMin holds on.
const (
	histogramBuckets = 8
	histogramMin     = 3
)

// logBucket is d's bucket of n on a log scale from lo to hi.
func logBucket(d, lo, hi time.Duration, n int) int {
	// Durations under 1 ns (a hold whose end was recorded before its start, from two
	// sources' clocks) go in the first bucket: their logarithm would be NaN or -Inf.
	lo = max(lo, 1)
	if hi <= lo || d <= lo {
		return 0
	}
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return min(int((math.Log(float64(d))-l)/(h-l)*float64(n)), n-1)
}

// overlaps are the stretches of time when two holders acted at once: a demo worker in its
// section while another worker was in its own, or while another holder had the lock in Redis
// (by more than overlapSlack; for a holding known from the census only, between its first
// and last sight). Holdings in Redis alone never overlap. Sections of shared leases (the
// rw-pool demo) overlap only when they conflict: a writer with any other reader or writer;
// readers share, and a pool's permits are many (the demo's checker bounds them).
func overlaps(k *keyHistory, now time.Time) [][2]time.Time {
	var out [][2]time.Time
	for i := range k.spans {
		a := &k.spans[i]
		if !a.section {
			continue
		}
		for j := range k.spans {
			b := &k.spans[j]
			if b.holder == a.holder || b.section && j < i {
				continue // each pair of sections once
			}
			if (a.mode != "" || b.mode != "") && !(b.section && conflicting(a.mode, b.mode)) {
				continue
			}
			bFrom, bTo := b.from, b.until(now)
			if !b.section {
				if !b.obtained && !b.seen.IsZero() {
					bTo = minTime(bTo, b.seen) // known from the census: held until its last sight
				}
				bFrom, bTo = bFrom.Add(overlapSlack), bTo.Add(-overlapSlack)
				if !b.silent.IsZero() {
					bTo = minTime(bTo, b.silent) // a crashed holder no longer acts
				}
			}
			from, to := maxTime(a.from, bFrom), minTime(minTime(a.to, bTo), now.Add(-overlapSettle))
			if !from.After(to) {
				out = append(out, [2]time.Time{from, to})
			}
		}
	}
	return out
}

// conflicting says whether two leases' sections may not overlap: one of them writes, and
// neither is a permit.
func conflicting(a, b string) bool {
	return (a == "write" || b == "write") && a != "permit" && b != "permit"
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
