package ui

import (
	"math"
	"testing"
	"unicode/utf8"
)

func TestSparkline(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		values []float64
		width  int
		top    float64
		want   string
	}{
		{"scaled to the largest", []float64{0, 1, 2, 4, 8}, 5, 0, "▁▂▃▅█"},
		{"zero differs from a small value", []float64{0, 0.01, 100}, 3, 0, "▁▂█"},
		{"fixed top caps larger values", []float64{1, 2, 50}, 3, 2, "▅██"},
		{"fewer values: right-aligned", []float64{3, 3}, 5, 0, "   ██"},
		{"more values: each cell keeps its peak", []float64{0, 9, 0, 0, 0, 0, 1, 0}, 4, 0, "█▁▁▂"},
		{"no data is blank", []float64{nan, -1, 2}, 3, 0, "  █"},
		{"all zero", []float64{0, 0, 0}, 3, 0, "▁▁▁"},
		{"no values", nil, 3, 0, "   "},
		{"no width", []float64{1}, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sparkline(tc.values, tc.width, tc.top)
			if got != tc.want {
				t.Errorf("sparkline(%v, %d, %v) = %q, want %q", tc.values, tc.width, tc.top, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n != tc.width {
				t.Errorf("%d cells, want %d", n, tc.width)
			}
		})
	}
}
