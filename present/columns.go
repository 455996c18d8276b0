package present

// The lock table's column titles, the same in `ls` and the TUI; their meanings are listed in
// docs/cli.md and docs/tui.md.
const (
	ColumnKey     = "KEY"    // the Redis key
	ColumnHolder  = "HOLDER" // the holder's node, Unknown when the value's format does not say
	ColumnTrace   = "TRACE"  // the holder's trace id, Unknown when none
	ColumnAge     = "AGE"    // how long the lock has been held (Age)
	ColumnTTL     = "TTL"    // the time left before it frees itself (TTL)
	ColumnReentry = "RE"     // the re-entry count of a re-entrant holder
	ColumnFence   = "FENCE"  // the fencing counter next to the lock
	ColumnWaiters = "W"      // waiters queued for it (TUI only: it learns them from events)
	ColumnFormat  = "FORMAT" // the value's format (scanner.Format)
	ColumnFlags   = "FLAGS"  // Flag labels (CLI; the TUI shows Flag marks in its first cells)
	ColumnServer  = "SERVER" // the server the lock is on (independent servers only)
)

// Column is the title of the column s sorts by.
func (s Sort) Column() string {
	switch s {
	case SortByTTL:
		return ColumnTTL
	case SortByAge:
		return ColumnAge
	case SortByHolder:
		return ColumnHolder
	default:
		return ColumnKey
	}
}
