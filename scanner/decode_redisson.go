package scanner

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// hashField is one field of a hash key as read (HSCAN).
type hashField struct {
	Name, Value string
}

// decodeHash decodes a Redisson lock: every field is <uuid>:<threadId> with the re-entry
// count as its value (a read-write lock's writer as <uuid>:<threadId>:write, next to a
// "mode" field of read or write: a read-write lock, Shared). Any other hash is opaque. The
// holder is shown as Node (the first owner for a read lock with several); Reentry is the sum
// of the counts.
func decodeHash(l *Lock, fields []hashField) {
	owners := make([]Owner, 0, len(fields))
	total := 0
	mode := ""
	for _, f := range fields {
		if f.Name == redissonModeField && (f.Value == "read" || f.Value == "write") {
			mode = f.Value
			continue
		}
		n, err := strconv.Atoi(f.Value)
		if err != nil || n < 0 || !isRedissonOwner(f.Name) {
			l.Format = FormatOpaque
			return
		}
		owners = append(owners, Owner{ID: f.Name, Count: n})
		total += n
	}
	if len(owners) == 0 {
		l.Format = FormatOpaque
		return
	}
	l.Format = FormatRedisson
	l.Owners, l.Reentry, l.Node = owners, total, owners[0].ID
	if mode != "" {
		redissonRW(l, mode, owners)
	}
}

// redissonModeField is the field of an RReadWriteLock's hash that says which side holds it.
const redissonModeField = "mode"

// isRedissonOwner checks <uuid>:<threadId>, the thread id a decimal number, optionally
// followed by ":write" (an RReadWriteLock's writer).
func isRedissonOwner(name string) bool {
	id, thread, ok := strings.Cut(name, ":")
	if !ok || !isUUID(id) {
		return false
	}
	return isDecimal(strings.TrimSuffix(thread, ":write"))
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isRedissonRW reports whether a Redisson lock is an RReadWriteLock (its hash has the mode
// field): its waiters listen on another channel.
func isRedissonRW(l *Lock) bool {
	return strings.HasPrefix(l.Value, redissonModeField+"=") || strings.Contains(l.Value, "\n"+redissonModeField+"=")
}

// hashText renders hash fields as the raw value: one "field=value" line each, capped at
// ValueCap bytes (truncated reports the cut).
func hashText(fields []hashField) (text string, truncated bool) {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(f.Name)
		sb.WriteByte('=')
		sb.WriteString(f.Value)
		if sb.Len() > ValueCap {
			return sb.String()[:ValueCap], true
		}
	}
	return sb.String(), false
}

// Redisson names what it keeps beside a lock after the lock (RedissonObject.prefixName and
// suffixName in 3.52.0): "<prefix>:{<name>}" and "{<name>}:<suffix>", or without the braces
// when the name has a "{" of its own. So every companion lives in its lock's cluster slot.
const (
	redissonTokenPrefix   = "redisson_lock_token"   // RFencedLock: INCR on every lock(), re-entries too
	redissonQueuePrefix   = "redisson_lock_queue"   // RFairLock: the queued waiters, in order (list)
	redissonTimeoutPrefix = "redisson_lock_timeout" // RFairLock: each waiter's stale deadline, unix ms (zset)
	redissonLatchPrefix   = "redisson_unlock_latch" // an unlock's idempotency marker, for a moment
	// Channels, not keys: an RLock's unlock message, and an RReadWriteLock's.
	redissonChannelPrefix   = "redisson_lock__channel"
	redissonRWChannelPrefix = "redisson_rwlock"
	// Suffixes: an RPermitExpirableSemaphore's permits (zset), a read lock's levels.
	redissonPermitsSuffix = ":timeout"
	redissonLevelInfix    = ":rwlock_timeout:"
)

// redissonPrefixed is Redisson's prefixName.
func redissonPrefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// RedissonQueueKey is an RFairLock's waiter queue (a list of <uuid>:<threadId>, in order); a
// force-release wakes its first live entry (actions/redisson.lua).
func RedissonQueueKey(lock string) string { return redissonPrefixed(redissonQueuePrefix, lock) }

// RedissonTimeoutKey holds the stale deadline of each entry of RedissonQueueKey (a sorted set
// scored in unix ms): past it, Redisson drops the waiter from the queue at its next attempt.
func RedissonTimeoutKey(lock string) string { return redissonPrefixed(redissonTimeoutPrefix, lock) }

// RedissonCompanionsInSlot reports whether lock's Redisson companions (RedissonQueueKey, ...)
// hash to lock's Redis Cluster slot. Redisson's naming keeps them there unless lock has a '{'
// but no hash tag (the prefixed name then hashes whole), or a '}' and no '{' (the braces it
// adds then make a shorter tag).
func RedissonCompanionsInSlot(lock string) bool {
	open := strings.IndexByte(lock, '{')
	if open < 0 {
		return !strings.Contains(lock, "}")
	}
	return strings.IndexByte(lock[open+1:], '}') > 0
}

// redissonNameOf inverts the name part of prefixName and suffixName: "{<name>}" is name when
// name has no "{"; a part with a "{" elsewhere is the name itself.
func redissonNameOf(part string) (string, bool) {
	if inner, ok := strings.CutPrefix(part, "{"); ok && strings.HasSuffix(inner, "}") {
		if name := inner[:len(inner)-1]; name != "" && !strings.Contains(name, "{") {
			return name, true
		}
	}
	return part, strings.Contains(part, "{")
}

// redissonLockOf names the Redisson lock key is a companion of.
func redissonLockOf(key string) (string, bool) {
	for _, prefix := range [...]string{redissonTokenPrefix, redissonQueuePrefix, redissonTimeoutPrefix} {
		if rest, ok := strings.CutPrefix(key, prefix+":"); ok {
			return redissonNameOf(rest)
		}
	}
	if rest, ok := strings.CutPrefix(key, redissonLatchPrefix+":"); ok {
		if i := strings.LastIndexByte(rest, ':'); i > 0 {
			return redissonNameOf(rest[:i]) // :<request id>
		}
		return "", false
	}
	// <name part>:<uuid>:<threadId>:rwlock_timeout:<level>
	i := strings.LastIndex(key, redissonLevelInfix)
	if i < 0 || !isDecimal(key[i+len(redissonLevelInfix):]) {
		return "", false
	}
	thread := strings.LastIndexByte(key[:i], ':')
	if thread < 0 || !isDecimal(key[thread+1:i]) {
		return "", false
	}
	id := strings.LastIndexByte(key[:thread], ':')
	if id < 0 || !isUUID(key[id+1:thread]) {
		return "", false
	}
	return redissonNameOf(key[:id])
}

// redissonPermitsOf names the RPermitExpirableSemaphore whose permits key would be
// ("{<name>}:timeout", a sorted set). Unlike redissonLockOf's names, this one is common enough
// for a lock of its own ("lock:{job}:timeout"): key is a companion only when it is a sorted
// set, which only its read tells (dropPermits).
func redissonPermitsOf(key string) (string, bool) {
	base, ok := strings.CutSuffix(key, redissonPermitsSuffix)
	if !ok {
		return "", false
	}
	return redissonNameOf(base)
}

// readRedisson fills in what Redisson keeps beside the Redisson locks among locks (one
// server's batch, decoded), in one round trip and only when the batch has any:
//
//   - the fence: an RFencedLock's token counter (redisson_lock_token). Redisson INCRs it on
//     every lock(), re-entries included, so it can be ahead of the token the holder got.
//   - with waiters set, who waits. An RFairLock's waiters are its queue's entries whose stale
//     deadline has not passed. A plain RLock's blocked lock() leaves no key, only its
//     client's subscription to the lock's channel: PUBSUB NUMSUB counts those, one call for
//     the whole batch. Redisson shares one subscription per channel per client, so it counts
//     waiting clients: each has at least one waiting thread. On a cluster the subscribers may
//     be on any node (or, sharded, on the slot's), so there only the queue is read and a lock
//     without one has unknown waiters.
//   - for a read-write lock, the PTTL of every read level's key (RedissonLevelKey, at most
//     hashCap a lock): each reader's own lease;
//   - for a semaphore, the permits of a RPermitExpirableSemaphore (its first hashCap), and
//     its waiting clients as a plain lock's, on the semaphore's channel.
//
// A refused read leaves its part unknown.
func readRedisson(ctx context.Context, rdb redis.Cmdable, locks []Lock, waiters bool, hashCap int) error {
	var idx []int
	for i := range locks {
		if locks[i].Format == FormatRedisson {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	_, cluster := rdb.(*redis.ClusterClient)
	fetched := time.Now()
	now := strconv.FormatInt(fetched.UnixMilli(), 10)
	tokens := make([]*redis.StringCmd, len(idx))
	queued := make([]*redis.IntCmd, len(idx))
	stale := make([]*redis.IntCmd, len(idx))
	permits := make([]*redis.ZSliceCmd, len(idx))
	levels := make([][]*redis.DurationCmd, len(idx))
	var channels []string
	var subscribers *redis.MapStringIntCmd
	pipe := rdb.Pipeline()
	for j, i := range idx {
		l := &locks[i]
		if waiters {
			channels = append(channels, redissonChannel(l))
		}
		if l.IsSemaphore() {
			permits[j] = pipe.ZRangeWithScores(ctx, RedissonPermitsKey(l.Key), 0, int64(hashCap)) // one more: tells the cut
			continue
		}
		tokens[j] = pipe.Get(ctx, redissonPrefixed(redissonTokenPrefix, l.Key))
		if waiters {
			queued[j] = pipe.LLen(ctx, RedissonQueueKey(l.Key))
			stale[j] = pipe.ZCount(ctx, RedissonTimeoutKey(l.Key), "-inf", now)
		}
		levels[j] = readLevels(ctx, pipe, l, hashCap)
	}
	if waiters && !cluster {
		subscribers = pipe.PubSubNumSub(ctx, channels...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	var counts map[string]int64
	if subscribers != nil {
		if c, err := subscribers.Result(); err == nil { // refused: unknown
			counts = c
		}
	}
	for j, i := range idx {
		l := &locks[i]
		if c := permits[j]; c != nil {
			if p, err := c.Result(); err == nil {
				redissonPermits(l, p[:min(len(p), hashCap)], len(p) > hashCap, fetched.UnixMilli())
			}
		}
		if c := tokens[j]; c != nil {
			if v, err := c.Result(); err == nil {
				l.Fence, l.HasFence = parseFence(v)
			}
		}
		applyLevels(l, levels[j])
		if !waiters {
			continue
		}
		var n, gone int64
		var errQ, errS error = redis.Nil, redis.Nil
		if queued[j] != nil {
			n, errQ = queued[j].Result()
			gone, errS = stale[j].Result()
		}
		switch {
		case errQ == nil && errS == nil && n > gone:
			l.Waiters, l.HasWaiters = int(n-gone), true
		case counts != nil:
			l.Waiters, l.HasWaiters = int(counts[channels[j]]), true
		}
	}
	return nil
}

// readLevels asks the PTTL of the read levels of l's readers (the first hashCap of them), in
// Shared.Holders order, level 1 up: nil unless l is an RReadWriteLock.
func readLevels(ctx context.Context, pipe redis.Pipeliner, l *Lock, hashCap int) []*redis.DurationCmd {
	if l.Kind() != KindRWLock {
		return nil
	}
	var cmds []*redis.DurationCmd
	for _, h := range l.Shared.Holders {
		for level := 1; h.Mode == protocol.ModeRead && level <= h.Count && len(cmds) < hashCap; level++ {
			cmds = append(cmds, pipe.PTTL(ctx, RedissonLevelKey(l.Key, h.Field, level)))
		}
	}
	return cmds
}

// applyLevels gives each reader of l its read levels (Leases: their keys and TTLs) and its own
// TTL, the longest of theirs: a reader whose levels have all gone holds nothing any more
// (Expired), though its field is still in the hash. Levels past the cap, or refused, count
// with the key's TTL.
func applyLevels(l *Lock, cmds []*redis.DurationCmd) {
	if len(cmds) == 0 {
		return
	}
	sh := l.Shared
	sh.InUse, sh.Truncated = 0, false
	next := 0
	for k := range sh.Holders {
		h := &sh.Holders[k]
		if h.Mode != protocol.ModeRead {
			sh.InUse += h.Count
			continue
		}
		h.TTL, h.Expired = 0, true
		for level := 1; level <= h.Count; level++ {
			if next >= len(cmds) {
				sh.Truncated = true
				h.TTL, h.Expired = l.TTL, false
				break
			}
			c := cmds[next]
			next++
			pttl, err := c.Result()
			if err != nil { // refused (an ACL without the level keys): the key's TTL, as uncapped
				h.TTL, h.Expired = max(h.TTL, l.TTL), false
				sh.InUse++
				continue
			}
			if pttl == -2 {
				sh.Expired++
				continue // gone: the level's lease ran out
			}
			ttl, forever := ttlOf(pttl)
			if forever {
				ttl = l.TTL
			}
			sh.InUse++
			h.Leases = append(h.Leases, Lease{Member: RedissonLevelKey(l.Key, h.Field, level), TTL: ttl})
			h.TTL, h.Expired = max(h.TTL, ttl), false
		}
	}
}

// redissonChannel is where l's waiters hear of an unlock: a semaphore's channel, an
// RReadWriteLock's, or an RLock's (an RFairLock's waiters each have their own, named after
// their queue entry).
func redissonChannel(l *Lock) string {
	if l.IsSemaphore() {
		return redissonPrefixed(redissonSemaphoreChannel, l.Key)
	}
	if isRedissonRW(l) {
		return redissonPrefixed(redissonRWChannelPrefix, l.Key)
	}
	return redissonPrefixed(redissonChannelPrefix, l.Key)
}
