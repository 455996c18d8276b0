// Package presenttest is the fixture that pins the CLI and the TUI to one presentation: the
// tests of each render Locks with their own code (cli's ls table, ui's lock table) and must
// find the texts of Want in the order of Orders.
package presenttest

import (
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// Now is the moment the locks were read, and the clock of the TUI rendering them.
var Now = time.Date(2025, 11, 29, 9, 0, 0, 0, time.UTC)

// StuckAfter is the --stuck-after of the fixture.
const StuckAfter = 5 * time.Minute

// Locks are fresh copies of the fixture: known and unknown holders, ages and TTLs that the
// CLI and the TUI used to print differently (12.3s against 12s, 30h against 1d06h).
func Locks() []*scanner.Lock {
	return []*scanner.Lock{
		{Key: "lock:a", Format: scanner.FormatLockscope, Node: "api-7", AcquiredAt: Now.Add(-12345 * time.Millisecond), TTL: 4290 * time.Millisecond, FetchedAt: Now},
		{Key: "lock:b", Format: scanner.FormatLockscope, Node: "api-1", AcquiredAt: Now.Add(-30 * time.Hour), NoExpiry: true, FetchedAt: Now},
		{Key: "lock:c", Format: scanner.FormatRedisson, TTL: 12345 * time.Millisecond, FetchedAt: Now},
		{Key: "lock:d", Format: scanner.FormatLockscope, Node: "worker-3", AcquiredAt: Now.Add(-6 * time.Minute), TTL: 90 * time.Second, FetchedAt: Now},
	}
}

// Row is what both tables show of a lock at Now.
type Row struct {
	Holder, Age, TTL string
	Stuck, NoExpiry  bool
}

// Want is every lock's row by key.
var Want = map[string]Row{
	"lock:a": {Holder: "api-7", Age: "12s", TTL: "4.2s"},
	"lock:b": {Holder: "api-1", Age: "30h00m", TTL: present.Never, Stuck: true, NoExpiry: true},
	"lock:c": {Holder: present.Unknown, Age: present.Unknown, TTL: "12s"},
	"lock:d": {Holder: "worker-3", Age: "6m00s", TTL: "1m30s", Stuck: true},
}

// Orders are the keys in each sort order, ascending.
var Orders = map[present.Sort][]string{
	present.SortByKey:    {"lock:a", "lock:b", "lock:c", "lock:d"},
	present.SortByTTL:    {"lock:a", "lock:c", "lock:d", "lock:b"},
	present.SortByAge:    {"lock:b", "lock:d", "lock:a", "lock:c"},
	present.SortByHolder: {"lock:b", "lock:a", "lock:d", "lock:c"},
}
