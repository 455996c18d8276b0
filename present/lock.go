package present

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// The texts of the AGE and TTL columns besides a duration.
const (
	Unknown = "-"       // a field the value's format does not carry (holder, trace, age)
	Never   = "never"   // the TTL of a lock without expiry: it never frees itself
	Expired = "expired" // the TTL ran out (extrapolated) and no read has confirmed the key gone yet
)

// The ages below take now on the server's clock (scanner.Clocks.Now): the clock locklib stamps
// a value with.

// Stuck says l has been held longer than stuckAfter at now. A lock whose acquisition time is
// unknown, or stamped in the future (Skew), is never stuck, and stuckAfter <= 0 turns the flag
// off.
func Stuck(l *scanner.Lock, now time.Time, stuckAfter time.Duration) bool {
	return stuckAfter > 0 && !l.AcquiredAt.IsZero() && l.Age(now) > stuckAfter
}

// skewTolerance is how far in the future of the server's clock a stamp may be and still count
// as just taken: a clock read over the network is only that exact.
const skewTolerance = time.Second

// Skewed is the AGE of a lock stamped in the future (Skew): its age is unknown.
const Skewed = "skew"

// Skew is how far l's acquisition stamp is ahead of now, when it is more than the clocks'
// tolerance: the holder's clock (or the server's) is off, and its age unknown. 0 otherwise.
func Skew(l *scanner.Lock, now time.Time) time.Duration {
	if ahead := -l.Age(now); !l.AcquiredAt.IsZero() && ahead > skewTolerance {
		return ahead
	}
	return 0
}

// Age is the AGE column: how long l has been held at now, Unknown, or Skewed.
func Age(l *scanner.Lock, now time.Time) string {
	switch {
	case l.AcquiredAt.IsZero():
		return Unknown
	case Skew(l, now) > 0:
		return Skewed
	}
	return Duration(max(l.Age(now), 0))
}

// Acquired is when l was taken, for `show` and the detail pane: "2026-12-01T03:04:05.123Z
// (12s ago)", or with a stamp in the future how far ahead of the server's clock it is.
func Acquired(l *scanner.Lock, now time.Time) string {
	if skew := Skew(l, now); skew > 0 {
		return fmt.Sprintf("%s (%s ahead of the server's clock: clock skew, age unknown)", Time(l.AcquiredAt), Duration(skew))
	}
	return Time(l.AcquiredAt) + " (" + Age(l, now) + " ago)"
}

// TTL is the TTL column: the time left at now, extrapolated from the read (FetchedAt + TTL),
// Never or Expired. The CLI passes the time of the read (the census is a snapshot), the TUI
// the clock, so the TUI counts down between reads.
func TTL(l *scanner.Lock, now time.Time) string {
	switch left := l.RemainingAt(now); {
	case l.NoExpiry && l.IsSemaphore() && !NeverFrees(l):
		// No TTL by design: its permits go, not the key (SemaphoreNoTTL). Those with a lease
		// (a RPermitExpirableSemaphore's) say when the last comes back.
		if last := lastLease(l, now); last > 0 {
			return Duration(last)
		}
		return Unknown
	case l.NoExpiry:
		return Never
	case left <= 0:
		return Expired
	default:
		return Duration(left)
	}
}

// lastLease is the time left at now to the live lease of l's holders that ends last (0 when
// none has one).
func lastLease(l *scanner.Lock, now time.Time) time.Duration {
	var last time.Duration
	for _, h := range l.Shared.Holders {
		if !h.Expired && !h.NoExpiry {
			last = max(last, l.FetchedAt.Add(h.TTL).Sub(now))
		}
	}
	return last
}

// InstanceTTL is one server's TTL of a key as read (Redlock and show's instance lines).
func InstanceTTL(in scanner.Instance) string {
	if in.NoExpiry {
		return Never
	}
	return Duration(in.TTL)
}

// DefaultStuckAfter is how long a lock may be held before it is flagged stuck, unless the
// operator says otherwise (--stuck-after).
const DefaultStuckAfter = 5 * time.Minute

// Ordinal is a count or token column (RE, FENCE, W): the number, or Unknown when there is none.
func Ordinal(n int64, ok bool) string {
	if !ok {
		return Unknown
	}
	return strconv.FormatInt(n, 10)
}

// OrUnknown is s, or Unknown when s is empty (HOLDER, TRACE).
func OrUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}

// Flag is a condition of a lock an on-call engineer must not miss.
type Flag int

const (
	FlagNoExpiry Flag = iota // no TTL: the lock never frees itself
	FlagStuck                // held longer than --stuck-after
	FlagValueCut             // the value is longer than scanner.ValueCap: only its start was read
	FlagNoQuorum             // Redlock: fewer instances agree than a quorum needs
	FlagSkew                 // stamped in the future of the server's clock: age unknown
)

// Label is the flag's word in the CLI's FLAGS column and the TUI's detail pane.
func (f Flag) Label() string {
	switch f {
	case FlagNoExpiry:
		return "NO-EXPIRY"
	case FlagStuck:
		return "STUCK"
	case FlagValueCut:
		return "value-cut"
	case FlagNoQuorum:
		return "NO-QUORUM"
	case FlagSkew:
		return "SKEW"
	}
	return "?"
}

// Mark is the flag's one-cell glyph in the TUI's flag column ("" when the flag has none: the
// TUI shows it elsewhere).
func (f Flag) Mark() string {
	switch f {
	case FlagStuck:
		return "!"
	case FlagNoExpiry:
		return "∞"
	}
	return ""
}

// NeverFrees says l is a lock without expiry: it never frees itself. (A key of another type
// under the pattern, FormatNotALock, without a TTL is no such lock, nor is a semaphore,
// whose key has no TTL by design: its permits are released or expire. A Redisson RSemaphore's
// count is the exception: it reads exactly as a naive lock's "1" whose EXPIRE never came,
// MaybeNaiveLock, and hiding that lock would hide the worst an operator can miss; its ttl
// says both, MaybeSemaphoreNoTTL.)
func NeverFrees(l *scanner.Lock) bool {
	return l.NoExpiry && l.Format != scanner.FormatNotALock && (!l.IsSemaphore() || l.MaybeNaiveLock())
}

// Flags are l's flags at now, in the order the FLAGS column lists them.
func Flags(l *scanner.Lock, now time.Time, stuckAfter time.Duration) []Flag {
	var flags []Flag
	if NeverFrees(l) {
		flags = append(flags, FlagNoExpiry)
	}
	if Stuck(l, now, stuckAfter) {
		flags = append(flags, FlagStuck)
	}
	if l.Truncated {
		flags = append(flags, FlagValueCut)
	}
	if l.Quorum != nil && !l.Quorum.Reached {
		flags = append(flags, FlagNoQuorum)
	}
	if Skew(l, now) > 0 {
		flags = append(flags, FlagSkew)
	}
	return flags
}

// FlagsText is the FLAGS column: the labels of l's flags, how far a skewed stamp is ahead
// ("SKEW +59m57s"), and on a Redlock target its quorum ("quorum 2/3", or "NO-QUORUM 1/3" when
// not reached).
func FlagsText(l *scanner.Lock, now time.Time, stuckAfter time.Duration) string {
	var words []string
	for _, f := range Flags(l, now, stuckAfter) {
		switch f {
		case FlagNoQuorum:
		case FlagSkew:
			words = append(words, f.Label()+" +"+Duration(Skew(l, now)))
		default:
			words = append(words, f.Label())
		}
	}
	if q := l.Quorum; q != nil {
		words = append(words, quorumText(q))
	}
	return strings.Join(words, " ")
}

// quorumText is "quorum 2/3", or "NO-QUORUM 1/3" when the agreeing instances are too few.
func quorumText(q *scanner.Quorum) string {
	if !q.Reached {
		return fmt.Sprintf("%s %d/%d", FlagNoQuorum.Label(), q.Agree, q.Total)
	}
	return fmt.Sprintf("quorum %d/%d", q.Agree, q.Total)
}

// valueCut ends a value longer than scanner.ValueCap in Redis: only its start was read.
var valueCut = fmt.Sprintf("…(truncated at %d bytes)", scanner.ValueCap)

// Value is l's value made safe to print (see SafeText), cut at max runes (max <= 0: whole).
// A value longer than scanner.ValueCap in Redis ends with "…(truncated at 4096 bytes)": only
// its start was read. (Cut here, it ends with SafeText's marker instead.)
func Value(l *scanner.Lock, max int) string {
	s := SafeText(l.Value, max)
	if l.Truncated && (max <= 0 || len(s) == len(SafeText(l.Value, 0))) { // not cut here
		s += valueCut
	}
	return s
}

// QuorumAgreement is the long form of a Redlock lock's quorum, where it is shown in full
// (`show`, the TUI's detail pane): "2/3 agree, 2 needed"; QuorumVerdict follows it.
func QuorumAgreement(q *scanner.Quorum) string {
	return fmt.Sprintf("%d/%d agree, %d needed", q.Agree, q.Total, q.Needed)
}

// QuorumVerdict is "reached" or "NOT reached".
func QuorumVerdict(q *scanner.Quorum) string {
	if q.Reached {
		return "reached"
	}
	return "NOT reached"
}
