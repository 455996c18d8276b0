package present

import "time"

// timeLayout is RFC 3339 in UTC with milliseconds: the precision of a lock value's acquisition
// time, and the same on every machine reading it.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time is a moment as the CLI and the TUI print it for people: UTC, RFC 3339 with milliseconds
// (2026-12-01T03:04:05.123Z), Unknown for the zero time. JSON output keeps its own
// documented formats.
func Time(t time.Time) string {
	if t.IsZero() {
		return Unknown
	}
	return t.UTC().Format(timeLayout)
}
