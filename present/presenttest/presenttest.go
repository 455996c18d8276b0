// Package presenttest is the fixture that pins the CLI and the TUI to one presentation: the
// tests of each render Locks with their own code (cli's ls table, ui's lock table) and must
// find the texts of Want in the order of Orders; `show` and the TUI's detail pane and release
// dialog must find those of Details; `release`/`extend` and the TUI's notices, and `audit` and
// the TUI's audit view, those of ChangedHands, Extend and Audit.
package presenttest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/locklib/protocol"
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
		{Key: "lock:a", Format: scanner.FormatLockscope, Node: "api-7", Trace: "req-42", AcquiredAt: acquiredA, Value: valueA,
			TTL: 4290 * time.Millisecond, FetchedAt: Now},
		{Key: "lock:b", Format: scanner.FormatLockscope, Node: "api-1", AcquiredAt: Now.Add(-30 * time.Hour), NoExpiry: true, FetchedAt: Now},
		{Key: "lock:c", Format: scanner.FormatRedisson, Type: "hash", Owners: []scanner.Owner{{ID: owner, Count: 2}}, Value: owner + "=2",
			TTL: 12345 * time.Millisecond, FetchedAt: Now},
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
	present.SortByTTL:    {"lock:b", "lock:a", "lock:c", "lock:d"}, // without expiry first
	present.SortByAge:    {"lock:b", "lock:d", "lock:a", "lock:c"},
	present.SortByHolder: {"lock:b", "lock:a", "lock:d", "lock:c"},
}

var (
	acquiredA = Now.Add(-12345 * time.Millisecond)
	valueA    = protocol.Value{Node: "api-7", Trace: "req-42", AcquiredAt: acquiredA, Rand: "0123456789abcdef"}.String()
)

// owner is lock:c's redisson holder entry.
const owner = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"

// Detail is what `show` and the TUI's detail pane both print of a lock, and the holder that
// the TUI's release dialog names.
type Detail struct {
	Acquired string // the acquired field starts with it
	TTL      string // the ttl field starts with it (a no-expiry lock: the long form)
	Holder   string // present.Holder of the record
	Owners   string // the owners (redisson)
}

// Details are the locks' details by key, at Now.
var Details = map[string]Detail{
	"lock:a": {Acquired: "2025-11-29T08:59:47.655Z (12s ago)", TTL: "4.2s",
		Holder: "api-7 (trace req-42, acquired 2025-11-29T08:59:47.655Z, 12s ago)"},
	"lock:b": {Acquired: "2025-11-28T03:00:00.000Z (30h00m ago)", TTL: present.NeverExpires,
		Holder: "api-1 (acquired 2025-11-28T03:00:00.000Z, 30h00m ago)"},
	"lock:c": {Acquired: present.Unknown, TTL: "12s", Holder: owner + " ×2", Owners: owner + " ×2"},
	"lock:d": {Acquired: "2025-11-29T08:54:00.000Z (6m00s ago)", TTL: "1m30s", Holder: "worker-3 (acquired 2025-11-29T08:54:00.000Z, 6m00s ago)"},
}

// ChangedHands is the value that replaced the one an operator acted on, and ChangedHandsHolder
// how `release` and the TUI name its holder at Now.
var (
	ChangedHands       = valueA
	ChangedHandsHolder = Details["lock:a"].Holder
)

// Extend is the TTL of an extend, and ExtendText how its result and its audit record show it.
const (
	Extend     = 90 * time.Second
	ExtendText = "1m30s"
)

// Password is in Audit's error; Redact removes it, as connect.Target.Redact would.
const Password = "hunter2"

// Redact stands for the target's connect.Target.Redact.
func Redact(s string) string { return strings.ReplaceAll(s, Password, "***") }

// Audit is an extend that failed, with an error quoting the password.
var Audit = actions.AuditRecord{Time: Now.Add(-1500 * time.Millisecond), Operator: "alice", Action: actions.ActionExtend,
	Key: "lock:a", Seen: valueA, Result: actions.Failed, Error: "AUTH " + Password + ": WRONGPASS", TTL: Extend}

// AuditCells are the cells of Audit under present.AuditColumns, as both outputs show them.
var AuditCells = []string{"2025-11-29T08:59:58.500Z", "extend", ExtendText, "failed: AUTH ***: WRONGPASS", "lock:a", "alice",
	present.Unknown, valueA}

// AuditTableProblems is what an audit table's header line and its row of Audit, as the CLI
// or the TUI renders them, get wrong against present.AuditColumns and AuditCells (none: nil).
func AuditTableProblems(header, row string) []string {
	var problems []string
	if got := strings.Fields(header); !slices.Equal(got, present.AuditColumns) {
		problems = append(problems, fmt.Sprintf("audit columns %v, want %v", got, present.AuditColumns))
	}
	for _, cell := range AuditCells {
		if !strings.Contains(row, cell) {
			problems = append(problems, fmt.Sprintf("audit row lacks %q: %s", cell, row))
		}
	}
	return problems
}
