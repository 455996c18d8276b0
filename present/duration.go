package present

import (
	"math"
	"strconv"
	"time"
)

// Duration is a compact duration with about two significant figures, truncated (never
// rounded up, so a TTL counting down never shows more than is left): 950ms, 4.2s, 37s,
// 12m05s, 3h07m, 5d02h. Tenths of a second show only under 10 s, where they matter and a live
// countdown does not flicker. A negative duration keeps its sign (an age never is one: see
// Age, which flags clock skew instead).
func Duration(d time.Duration) string {
	// Appended with strconv rather than fmt: `ls` formats two durations per row.
	return string(appendDuration(make([]byte, 0, 8), d))
}

func appendDuration(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -max(d, -math.MaxInt64) // -MinInt64 would overflow
	}
	switch {
	case d < time.Second:
		return append(strconv.AppendInt(b, d.Milliseconds(), 10), "ms"...)
	case d < 10*time.Second:
		b = strconv.AppendInt(b, int64(d/time.Second), 10)
		return append(append(b, '.', byte('0'+(d%time.Second)/(100*time.Millisecond))), 's')
	case d < time.Minute:
		return append(strconv.AppendInt(b, int64(d/time.Second), 10), 's')
	case d < time.Hour:
		return appendPair(b, d/time.Minute, 'm', (d%time.Minute)/time.Second, 's')
	case d < 48*time.Hour:
		return appendPair(b, d/time.Hour, 'h', (d%time.Hour)/time.Minute, 'm')
	default:
		return appendPair(b, d/(24*time.Hour), 'd', (d%(24*time.Hour))/time.Hour, 'h')
	}
}

// appendPair appends "<major><majorUnit><minor, two digits><minorUnit>", as in 12m05s.
func appendPair(b []byte, major time.Duration, majorUnit byte, minor time.Duration, minorUnit byte) []byte {
	b = append(strconv.AppendInt(b, int64(major), 10), majorUnit)
	return append(b, byte('0'+minor/10), byte('0'+minor%10), minorUnit)
}
