package ui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/present"
)

// barGlyphs draws the fraction of the TTL left as a bar of width cells with eighth-cell
// precision: the filled part and the empty rest. Its shape alone carries the information, so
// it reads the same without colour.
func barGlyphs(frac float64, width int) (filled, rest string) {
	if width <= 0 {
		return "", ""
	}
	frac = min(max(frac, 0), 1)
	eighths := int(frac*float64(width*8) + 0.5)
	full, part := eighths/8, eighths%8
	var sb strings.Builder
	sb.WriteString(strings.Repeat("█", full))
	if part > 0 && full < width {
		sb.WriteRune([]rune(" ▏▎▍▌▋▊▉")[part])
		full++
	}
	return sb.String(), strings.Repeat("░", width-full)
}

// ttlBar is barGlyphs coloured by how much is left.
func (s styles) ttlBar(frac float64, width int) string {
	filled, rest := barGlyphs(frac, width)
	st := s.barFull
	switch {
	case frac < 0.2:
		st = s.barLow
	case frac < 0.5:
		st = s.barMid
	}
	return st.Render(filled) + s.barEmpty.Render(rest)
}

// cell fits s (plain text, from Redis or not) into exactly width cells: made safe for the
// terminal (present.SafeText), then cut with an ellipsis or padded. It is the render step of
// every table cell, so callers pass text as read.
func cell(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = present.SafeText(s, 0)
	w := lipgloss.Width(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return s + strings.Repeat(" ", width-w)
}

// cellRight is cell, aligned right.
func cellRight(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = present.SafeText(s, 0)
	w := lipgloss.Width(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return strings.Repeat(" ", width-w) + s
}

// fitLine cuts a styled line to width cells (never wraps).
func fitLine(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// fitBlock makes a styled block exactly height lines, none wider than width: the last line of
// defence that keeps any terminal size, down to 20 columns, free of wrapped or stray lines.
func fitBlock(s string, width, height int) string {
	if height <= 0 || width <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		lines[i] = fitLine(l, width)
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// clipBlock cuts a styled block to at most width x height without padding it (overlays must
// cover only their own cells).
func clipBlock(s string, width, height int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:max(height, 0)]
	}
	for i, l := range lines {
		lines[i] = fitLine(l, width)
	}
	return strings.Join(lines, "\n")
}
