package present

import (
	"fmt"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// KindMark is the short name of a shared primitive's kind, which the FORMAT column adds to its
// format ("redisson/rw"): "rw", "sem" or "psem"; "" for an exclusive lock.
func KindMark(k scanner.Kind) string {
	switch k {
	case scanner.KindRWLock:
		return "rw"
	case scanner.KindSemaphore:
		return "sem"
	case scanner.KindPermitSemaphore:
		return "psem"
	}
	return ""
}

// FormatText is the FORMAT column: the format, and for a shared primitive its KindMark
// ("lockscope/rw", "redisson/psem").
func FormatText(l *scanner.Lock) string {
	if mark := KindMark(l.Kind()); mark != "" {
		return string(l.Format) + "/" + mark
	}
	return string(l.Format)
}

// HolderText is the HOLDER column (escape it where it is printed): the holder's node, or for a
// shared primitive who holds it in a few words: a writer or a lone reader by name with its mode
// ("api-4 (write)"), several readers by number ("3 readers"), a semaphore by its permits
// ("2/5 permits", "2 permits" without a known limit, "3 available" when holders are not
// recorded). Unknown when nobody is known to hold it.
func HolderText(l *scanner.Lock) string {
	sh := l.Shared
	if sh == nil {
		return OrUnknown(l.Node)
	}
	switch {
	case sh.HoldersUnknown && sh.HasAvailable:
		return fmt.Sprintf("%d available", sh.Available)
	case sh.Kind == scanner.KindSemaphore || sh.Kind == scanner.KindPermitSemaphore:
		if sh.HasLimit {
			return fmt.Sprintf("%d/%d permits", sh.InUse, sh.Limit)
		}
		return Count(sh.InUse, "permit")
	}
	switch owners, one := sh.LiveOwners(); {
	case owners == 0:
		return Unknown
	case owners > 1:
		return Count(owners, "reader")
	default:
		return HolderName(one) + " (" + one.Mode.String() + ")"
	}
}

// HolderName names a holder of a shared primitive: its node when the layout records one
// (lockscope), else its id.
func HolderName(h scanner.SharedHolder) string {
	if h.Node != "" {
		return h.Node
	}
	return h.ID
}

// SharedSummary is one line of a shared primitive's counts, for `show` and the detail pane:
// "read-write lock held for read: 3 levels, 1 expired not yet removed" or "semaphore: 2 of 5
// permits in use, 3 available, 1 expired not yet given back, holders not recorded".
func SharedSummary(sh *scanner.Shared) Safe {
	var text string
	switch sh.Kind {
	case scanner.KindRWLock:
		text = "read-write lock, "
		switch sh.Mode {
		case protocol.ModeWrite:
			text += "held for write"
		case protocol.ModeRead:
			text += "held for read"
		default:
			text += "not held"
		}
		text += ": " + Count(sh.InUse, "level") + " held"
	default:
		text = sh.Kind.String() + ": "
		switch {
		case sh.HoldersUnknown:
			text += "permits in use not recorded"
		case sh.HasLimit:
			text += fmt.Sprintf("%d of %d permits in use", sh.InUse, sh.Limit)
		default:
			text += fmt.Sprintf("%d permits in use (limit unknown)", sh.InUse)
		}
		if sh.HasAvailable {
			text += fmt.Sprintf(", %d available", sh.Available)
		}
	}
	if sh.Expired > 0 {
		text += fmt.Sprintf(", %d expired not yet removed", sh.Expired)
	}
	if sh.Truncated {
		text += " (only the first read: more are stored)"
	}
	return Safe(text)
}

// SharedHolderLine is one holder of a shared primitive, for `show` and the detail pane: its
// id, mode and levels, its own TTL, and where the layout records them its node, trace and
// acquisition: "00000000000000aa  read ×2  ttl 29s  node api-1 trace t-1 acquired
// 2026-12-01T03:04:05.123Z (12s ago)". The TTL is extrapolated from the read to now.
func SharedHolderLine(l *scanner.Lock, h scanner.SharedHolder, now, serverNow time.Time) Safe {
	line := Sprintf("%s  %s ×%d  ttl %s", h.ID, h.Mode.String(), h.Count, HolderTTL(l, h, now))
	if h.Node != "" {
		line += Sprintf("  node %s trace %s acquired %s (%s ago)", h.Node, OrUnknown(h.Trace), Time(h.AcquiredAt), Duration(serverNow.Sub(h.AcquiredAt)))
	}
	return line
}

// HolderTTL is a shared primitive's holder's time left at now, extrapolated from the read:
// Expired, Never (a permit without a lease) or a duration.
func HolderTTL(l *scanner.Lock, h scanner.SharedHolder, now time.Time) string {
	switch left := l.FetchedAt.Add(h.TTL).Sub(now); {
	case h.NoExpiry:
		return Never
	case h.Expired || left <= 0:
		return Expired
	default:
		return Duration(left)
	}
}

// SharedWaiterLine is one queued waiter of a lockscope lease set: "<id>  write  ttl 15s  value
// <value>".
func SharedWaiterLine(w scanner.SharedWaiter) Safe {
	return Sprintf("%s  %s  ttl %s  value %s", w.ID, w.Mode.String(), Duration(w.TTL), w.Value)
}

// SemaphoreNoTTL is the ttl row of a semaphore whose key has no TTL, where a lock's would say
// NeverExpires: for a semaphore that is no fault.
const SemaphoreNoTTL = "no TTL: a semaphore's key has none; its permits are released or expire"

// MaybeSemaphoreNoTTL is the ttl row of a key read as a Redisson RSemaphore
// (scanner.Lock.MaybeNaiveLock): its count without TTL is also what a naive lock looks like
// when its EXPIRE never came, so it stays flagged.
const MaybeSemaphoreNoTTL = "never expires, if a lock (SET without EXPIRE); a Redisson RSemaphore's count reads the same"
