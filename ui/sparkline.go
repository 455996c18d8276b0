package ui

import (
	"math"
	"strings"
)

// sparkLevels are the sparkline's glyphs, lowest first. Zero has the lowest one of its own, so
// that a quiet stretch (0 waiters) reads differently from a small count and from no data.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkNoData is the glyph of a column without a sample.
const sparkNoData = ' '

// sparkline draws values, oldest first, in exactly width cells (unstyled: the caller styles
// it). When there are more values than cells, each cell shows the largest of the values it
// covers (a peak never disappears at narrow widths); when there are fewer, the line is
// right-aligned (the newest value at the right edge) and blank on the left. A value is
// scaled against top, or against the largest value when top <= 0; NaN or a negative value is
// no data (blank). Zero is the lowest glyph, any positive value at least the second lowest.
func sparkline(values []float64, width int, top float64) string {
	if width <= 0 {
		return ""
	}
	cells := sparkCells(values, width)
	if top <= 0 {
		for _, v := range cells {
			if v > top {
				top = v
			}
		}
	}
	var b strings.Builder
	b.Grow(width * 3)
	for _, v := range cells {
		b.WriteRune(sparkGlyph(v, top))
	}
	return b.String()
}

// sparkCells resamples values into width cells: each the maximum of the values it covers
// (NaN for a cell with no data), right-aligned when values are fewer than cells.
func sparkCells(values []float64, width int) []float64 {
	cells := make([]float64, width)
	if len(values) <= width {
		pad := width - len(values)
		for i := range pad {
			cells[i] = math.NaN()
		}
		copy(cells[pad:], values)
		return cells
	}
	for i := range cells {
		lo, hi := i*len(values)/width, (i+1)*len(values)/width
		best := math.NaN()
		for _, v := range values[lo:hi] {
			if v >= 0 && (math.IsNaN(best) || v > best) {
				best = v
			}
		}
		cells[i] = best
	}
	return cells
}

// sparkGlyph is the glyph of v on a scale whose largest value is top.
func sparkGlyph(v, top float64) rune {
	switch {
	case math.IsNaN(v) || v < 0:
		return sparkNoData
	case v == 0 || top <= 0:
		return sparkLevels[0]
	}
	n := len(sparkLevels) - 1 // the levels above zero's
	level := int(math.Ceil(min(v/top, 1) * float64(n)))
	return sparkLevels[max(1, min(level, n))]
}
