package present

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// NeverExpires is the long form of FlagNoExpiry, where a lock is shown in full (`show`, the
// TUI's detail pane and dialogs); the TTL column says Never.
const NeverExpires = "never expires: no TTL, it never frees itself"

// holderValueMax is how much of a value Holder shows when nothing else names the holder.
const holderValueMax = 60

// Holder describes who holds a lock whose value is value, as read (escape it where it is
// printed). A lockscope value decodes to `api-7 (trace req-42, acquired
// 2026-12-01T03:04:05.123Z, 12s ago)`. Else l, the scanner's record of the lock (nil when
// there is none), may name the holder: its decoded node, a redisson lock's owners, a bsm
// lock's metadata. Else it is the value, quoted and cut: `value "…"`. A shared primitive
// (read-write lock, semaphore) is described by HolderText.
func Holder(value string, l *scanner.Lock, now time.Time) string {
	if l != nil && l.Shared != nil {
		return HolderText(l) // its value is members or a count, not a holder's
	}
	node, trace, acquired := "", "", time.Time{}
	if v, err := protocol.ParseValue(value); err == nil {
		node, trace, acquired = OrUnknown(v.Node), v.Trace, v.AcquiredAt
	} else if l != nil {
		node, trace, acquired = l.Node, l.Trace, l.AcquiredAt
	}
	switch {
	case node != "":
		var about []string
		if trace != "" {
			about = append(about, "trace "+trace)
		}
		if !acquired.IsZero() {
			about = append(about, "acquired "+Time(acquired)+", "+Duration(now.Sub(acquired))+" ago")
		}
		if len(about) == 0 {
			return node
		}
		return node + " (" + strings.Join(about, ", ") + ")"
	case l != nil && len(l.Owners) > 0:
		return Owners(l.Owners)
	case l != nil && l.Meta() != "":
		return l.Meta()
	}
	return `value "` + clip(value, holderValueMax) + `"`
}

// Owner is one holder entry of a redisson lock: its id and re-entry count, `uuid:1 ×2`.
func Owner(o scanner.Owner) string { return fmt.Sprintf("%s ×%d", o.ID, o.Count) }

// Owners are a redisson lock's holder entries in one line, `uuid:1 ×2, uuid:7 ×1`.
func Owners(owners []scanner.Owner) string {
	parts := make([]string, len(owners))
	for i, o := range owners {
		parts[i] = Owner(o)
	}
	return strings.Join(parts, ", ")
}
