package scanner

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Shared primitives (Lock.Shared): lockscope's lease sets (docs/value-format.md, "Lease
// sets"), Redisson's RReadWriteLock, RSemaphore and RPermitExpirableSemaphore
// (/work/shared/peers/redisson/README.md cases 4 to 7 describe what 3.52.0 writes).

// decodeLeaseSet decodes a sorted set at a lock key as a lockscope lease set: every member a
// protocol.LeaseMember scored by its deadline, all of one primitive (r| and w| members make a
// read-write lock, p| members a semaphore). members are the first of the set (cut: there
// are more), nowMs the server's clock, limit the value of protocol.LimitKey ("" when absent),
// queue the wait queue's first entries. Anything else is no lease set: false, and l is left
// alone.
func decodeLeaseSet(l *Lock, members []redis.Z, cut bool, nowMs int64, limit string, queue []string) bool {
	if len(members) == 0 {
		return false
	}
	sh := &Shared{Truncated: cut}
	var liveRead, liveWrite bool
	for _, z := range members {
		text, ok := z.Member.(string)
		if !ok {
			return false
		}
		m, ok := protocol.ParseLeaseMember(text)
		if !ok {
			return false
		}
		kind := KindRWLock
		if m.Mode == protocol.ModePermit {
			kind = KindSemaphore
		}
		if sh.Kind != KindLock && sh.Kind != kind {
			return false // permits and read-write levels in one set: no primitive of ours
		}
		sh.Kind = kind
		deadline := scoreMs(z.Score)
		ttl, expired := leaseTTL(deadline, nowMs)
		i := slices.IndexFunc(sh.Holders, func(h SharedHolder) bool { return h.ID == m.Value.Rand && h.Mode == m.Mode })
		if i < 0 {
			sh.Holders = append(sh.Holders, SharedHolder{ID: m.Value.Rand, Mode: m.Mode, Expired: true})
			i = len(sh.Holders) - 1
		}
		h := &sh.Holders[i]
		h.Count++
		h.Leases = append(h.Leases, Lease{Member: text, Deadline: deadline, TTL: ttl})
		if expired {
			sh.Expired++
		} else {
			sh.InUse++
			h.Expired = false
			h.TTL = max(h.TTL, ttl)
			liveRead, liveWrite = liveRead || m.Mode == protocol.ModeRead, liveWrite || m.Mode == protocol.ModeWrite
		}
		// The holder is named by its earliest level: the Obtain that took it first.
		if h.Count == 1 || m.Value.AcquiredAt.Before(h.AcquiredAt) {
			h.Node, h.Trace, h.AcquiredAt = m.Value.Node, m.Value.Trace, m.Value.AcquiredAt
		}
	}
	switch {
	case sh.Kind == KindSemaphore:
		sh.Mode = protocol.ModePermit
		if n, err := strconv.Atoi(limit); err == nil && n >= 1 {
			sh.Limit, sh.HasLimit = n, true
			sh.Available, sh.HasAvailable = max(n-sh.InUse, 0), !sh.Truncated
		}
	case liveWrite:
		sh.Mode = protocol.ModeWrite
	case liveRead:
		sh.Mode = protocol.ModeRead
	}
	for _, e := range queue {
		if w, ok := parseLeaseQueueEntry(e); ok {
			sh.Waiters = append(sh.Waiters, w)
		}
	}
	l.Format, l.Shared = FormatLockscope, sh
	l.Value, l.Truncated = memberText(members)
	l.Truncated = l.Truncated || sh.Truncated
	if n, h := sh.LiveOwners(); n == 1 && sh.Kind == KindRWLock {
		l.Node, l.Trace, l.AcquiredAt = h.Node, h.Trace, h.AcquiredAt
		if h.Count > 1 {
			l.Reentry = h.Count
		}
	}
	return true
}

// scoreMs is a sorted set's score as unix ms, saturated: Redis takes ±inf as a score (a
// lease or permit scored +inf is never removed by any expiry: it holds forever), and Go's
// conversion of an infinite or out-of-range float to int64 is not defined (amd64 gives the
// most negative int64 for both, which read +inf as long expired).
func scoreMs(score float64) int64 {
	switch {
	case score >= math.MaxInt64:
		return math.MaxInt64
	case score <= math.MinInt64 || score != score: // NaN: Redis refuses it; none the less never live
		return math.MinInt64
	}
	return int64(score)
}

// leaseTTL is the time left to a lease whose deadline is deadlineMs at nowMs (both unix ms).
func leaseTTL(deadlineMs, nowMs int64) (ttl time.Duration, expired bool) {
	if deadlineMs <= nowMs {
		return 0, true
	}
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(deadlineMs-nowMs, maxMs)) * time.Millisecond, false
}

// memberText is a lease set's raw value: its member texts, sorted (a renewal, which changes
// only scores and so their order, leaves it as it is), one a line, capped at ValueCap.
func memberText(members []redis.Z) (string, bool) {
	texts := make([]string, len(members))
	for i, z := range members {
		texts[i], _ = z.Member.(string)
	}
	slices.Sort(texts)
	var sb strings.Builder
	for i, t := range texts {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(t)
		if sb.Len() > ValueCap {
			return sb.String()[:ValueCap], true
		}
	}
	return sb.String(), false
}

// parseLeaseQueueEntry reads a lease set's wait queue entry, "<waiter id>|<ttl ms>|<mode>|
// <value>" (docs/value-format.md, "Companions"): protocol.ParseQueueEntry's entry with the
// mode in front of the value, as a mode byte or its name.
func parseLeaseQueueEntry(entry string) (SharedWaiter, bool) {
	id, ttl, rest, ok := protocol.ParseQueueEntry(entry)
	if !ok {
		return SharedWaiter{}, false
	}
	modeText, value, ok := strings.Cut(rest, "|")
	if !ok {
		return SharedWaiter{}, false
	}
	var mode protocol.Mode
	for _, m := range [...]protocol.Mode{protocol.ModeRead, protocol.ModeWrite, protocol.ModePermit} {
		if modeText == string(m) || modeText == m.String() {
			mode = m
		}
	}
	if mode == 0 {
		return SharedWaiter{}, false
	}
	return SharedWaiter{ID: id, Mode: mode, TTL: ttl, Value: value, Entry: entry}, true
}

// redissonRW makes the Shared record of a Redisson RReadWriteLock from its hash's mode and
// owners: a reader's field is <uuid>:<threadId> (its count: its read levels), the writer's
// the same with ":write". Every holder's TTL is the key's until readRedissonShared reads the
// readers' levels.
func redissonRW(l *Lock, mode string, owners []Owner) {
	sh := &Shared{Kind: KindRWLock, Mode: protocol.ModeRead}
	if mode == "write" {
		sh.Mode = protocol.ModeWrite
	}
	for _, o := range owners {
		h := SharedHolder{ID: o.ID, Mode: protocol.ModeRead, Count: o.Count, TTL: l.TTL, Field: o.ID}
		if id, ok := strings.CutSuffix(o.ID, redissonWriteSuffix); ok {
			h.ID, h.Mode = id, protocol.ModeWrite
		}
		sh.InUse += o.Count
		sh.Holders = append(sh.Holders, h)
	}
	l.Shared = sh
}

// redissonWriteSuffix ends an RReadWriteLock writer's field.
const redissonWriteSuffix = ":write"

// redissonSemaphore decodes a string as a Redisson RSemaphore: the number of permits still
// available, a decimal that may go below zero (addPermits takes a negative count), in a key
// without a TTL. Who holds the others is recorded nowhere. Told apart from a naive lock's
// "1" or unix time by the TTL such a lock sets, and from a timestamp by its size (fewer than
// a billion permits): a naive lock that never got its TTL, "1" without expiry, reads as a
// semaphore (docs/scanner.md). readRedisson tells a RPermitExpirableSemaphore (the same
// string, with its permits beside it) by its permits.
func redissonSemaphore(l *Lock, v string) bool {
	digits := strings.TrimPrefix(v, "-")
	if !l.NoExpiry || len(digits) > 9 || !isDecimal(digits) || (len(digits) > 1 && digits[0] == '0') {
		return false
	}
	n, _ := strconv.Atoi(v)
	l.Shared = &Shared{Kind: KindSemaphore, Mode: protocol.ModePermit, Available: n, HasAvailable: true, HoldersUnknown: true}
	return true
}

// redissonPermits turns the first permits of a RPermitExpirableSemaphore ("{key}:timeout",
// each member a permit id of 16 raw bytes, scored by its expiry in unix ms on the Redisson
// client's clock; cut: there are more) into l's holders, at nowMs. No permits: l stays
// an RSemaphore (a permit-expirable semaphore with none out looks the same). The limit is the
// permits available plus those in the set, expired ones included: Redisson gives those back
// only at its next acquire or availablePermits.
func redissonPermits(l *Lock, permits []redis.Z, cut bool, nowMs int64) {
	sh := l.Shared
	if sh == nil || len(permits) == 0 {
		return
	}
	sh.Kind, sh.HoldersUnknown, sh.Truncated = KindPermitSemaphore, false, cut
	for _, z := range permits {
		id, _ := z.Member.(string)
		deadline := scoreMs(z.Score)
		ttl, expired := leaseTTL(deadline, nowMs)
		forever := deadline >= RedissonNoExpiryMs
		if forever {
			ttl = 0
		}
		sh.Holders = append(sh.Holders, SharedHolder{ID: hex.EncodeToString([]byte(id)), Mode: protocol.ModePermit, Count: 1,
			TTL: ttl, Expired: expired, NoExpiry: forever, Leases: []Lease{{Member: id, Deadline: deadline, TTL: ttl}}})
		if expired {
			sh.Expired++
		} else {
			sh.InUse++
		}
	}
	if !sh.Truncated {
		sh.Limit, sh.HasLimit = sh.Available+sh.InUse+sh.Expired, true
	}
}

// RedissonNoExpiryMs is the score RPermitExpirableSemaphore gives a permit acquired without a
// lease time (its nonExpirableTimeout in 3.52.0, Long.MAX_VALUE / 10^4): it never expires.
const RedissonNoExpiryMs = 922337203685477

// RedissonLevelKey is the key of one read level of an RReadWriteLock's reader (its field):
// Redisson's suffixName of the lock, then ":<field>:rwlock_timeout:<level>". Each level has
// its own TTL: the reader's lease is the longest of them.
func RedissonLevelKey(lock, field string, level int) string {
	return redissonSuffixed(lock, field) + redissonLevelInfix + strconv.Itoa(level)
}

// redissonSuffixed is Redisson's suffixName: "{<name>}:<suffix>", or "<name>:<suffix>" when
// the name has a "{" of its own.
func redissonSuffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// RedissonPermitsKey is a RPermitExpirableSemaphore's set of permits: ids (16 raw bytes) scored by
// their expiry in unix ms.
func RedissonPermitsKey(sem string) string { return redissonSuffixed(sem, redissonPermitsSuffix[1:]) }

// redissonSemaphoreChannel is where a Redisson semaphore's waiters hear of released permits
// ("redisson_sc"): its subscribers are waiting clients.
const redissonSemaphoreChannel = "redisson_sc"
