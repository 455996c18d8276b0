package present

import (
	"fmt"
	"strconv"
	"time"
)

// Duration is a compact duration with about two significant figures, truncated (never
// rounded up, so a TTL counting down never shows more than is left): 950ms, 4.2s, 37s,
// 12m05s, 3h07m, 5d02h. Tenths of a second show only under 10 s, where they matter and a live
// countdown does not flicker. A negative duration (an age under clock skew: the holder's
// clock is ahead) keeps its sign.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Duration(-d)
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < 10*time.Second:
		return fmt.Sprintf("%d.%ds", d/time.Second, (d%time.Second)/(100*time.Millisecond))
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, (d%time.Minute)/time.Second)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, (d%time.Hour)/time.Minute)
	default:
		return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	}
}
