package scanner

import (
	"context"
	"strings"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Companion keys are the keys a lock library keeps beside a lock: locklib's fence, wait queue
// and the rest (protocol.LockKeyOf), Redisson's token, fair-lock queue and deadlines, read-lock
// levels and unlock latches (redissonLockOf), and semaphore permits (redissonPermitsOf, known
// only once read: dropPermits). They belong to their lock: a key whose lock the pattern also
// matches is never a row of its own, so a wide pattern (`*`) lists each lock once instead of
// its counters and queues as locks that never expire.
// A pattern that matches a companion but not its lock (`redisson_lock_token:*`) still lists it.
//
// A census learns which locks have locklib companions (protocol.FenceKey,
// protocol.WaitQueueKey) from its own SCAN instead of asking for each lock's: SCAN walks the
// whole keyspace anyway, so widening MATCH to also return them (protocol.LockKeyOf names
// their lock) costs no lookup, while asking costs one per lock, as much as the lock's own
// PTTL. Only companions that exist are then read, after the scan. A pattern with '[' or '\'
// keeps the per-batch reads: the client filters the widened SCAN's answers by the pattern
// itself, and does so only for '*' and '?'. Redisson's are read per batch, for the batch's
// Redisson locks only (readRedisson).

// companionOf names the lock key is a companion of, and which locklib companion it is
// (0 for Redisson's, which the census reads per batch instead).
func companionOf(key string) (lock string, kind protocol.Companion, ok bool) {
	if strings.IndexByte(key, '{') < 0 {
		return "", 0, false // every companion name has one: the fast answer for most keys
	}
	if lock, kind, ok := protocol.LockKeyOf(key); ok {
		return lock, kind, true
	}
	lock, ok = redissonLockOf(key)
	return lock, 0, ok
}

// companionIn reports whether key is a companion of a lock that pattern matches: it is shown
// with that lock, not as a row.
func companionIn(pattern, key string) bool {
	lock, _, ok := companionOf(key)
	return ok && MatchGlob(pattern, lock)
}

// dropCompanions removes from keys (which match pattern) the companions of locks that
// pattern matches, in place.
func dropCompanions(pattern string, keys []string) []string {
	locks := keys[:0]
	for _, k := range keys {
		if !companionIn(pattern, k) {
			locks = append(locks, k)
		}
	}
	return locks
}

// dropPermits empties (Key "", as for a key gone) the records among locks, just read, that are
// the permits of a Redisson semaphore pattern matches (redissonPermitsOf): by name they could
// be locks, so they are dropped only once read as sorted sets.
func dropPermits(pattern string, locks []Lock) {
	for i := range locks {
		if locks[i].Type != "zset" {
			continue
		}
		if sem, ok := redissonPermitsOf(locks[i].Key); ok && MatchGlob(pattern, sem) {
			locks[i] = Lock{}
		}
	}
}

// canDiscover reports whether pattern is simple enough to filter on the client exactly.
func canDiscover(pattern string) bool { return !strings.ContainsAny(pattern, `[\`) }

// widenedPattern matches pattern's keys and their companions: "*" before (the prefix) and a
// "*" after unless there is one (the closing "}" of the hash tag).
func widenedPattern(pattern string) string {
	if strings.HasSuffix(pattern, "*") {
		return "*" + pattern
	}
	return "*" + pattern + "*"
}

// sortOut keeps the keys that are locks matching the pattern and records the companions of
// those locks among the rest.
func (p *pass) sortOut(keys []string) []string {
	locks := keys[:0]
	for _, k := range keys {
		lock, kind, ok := companionOf(k)
		if !ok || !MatchGlob(p.s.opts.Pattern, lock) {
			if MatchGlob(p.s.opts.Pattern, k) {
				locks = append(locks, k)
			}
			continue
		}
		switch kind {
		case protocol.Fence:
			p.mu.Lock()
			p.fences[lock] = struct{}{}
			p.mu.Unlock()
		case protocol.WaitQueue:
			p.mu.Lock()
			p.queues[lock] = struct{}{}
			p.mu.Unlock()
		}
	}
	return locks
}

// joinCompanions reads the companions the SCAN found and fills them into locks. A locklib lock
// with no wait queue in the SCAN has nobody waiting (HasWaiters, Waiters 0); other formats'
// waiters are not in that queue (Redisson's were read with their batch).
func (p *pass) joinCompanions(ctx context.Context, locks []Lock) error {
	if p.denied[readValue].Load() {
		return nil // a metadata-only user: the one warning already says companions are unknown
	}
	var todo []int
	for i := range locks {
		_, fence := p.fences[locks[i].Key]
		_, queue := p.queues[locks[i].Key]
		if locks[i].Format == FormatLockscope {
			locks[i].HasWaiters = true
		}
		if fence || queue {
			todo = append(todo, i)
		}
	}
	rdb, addr := p.s.target.Clients[0], p.s.addr(0) // the server, or the cluster client routing by slot
	for start := 0; start < len(todo); start += p.s.opts.Count {
		chunk := todo[start:min(start+p.s.opts.Count, len(todo))]
		err := p.retry(ctx, addr, func() error { return p.readCompanions(ctx, rdb, locks, chunk) })
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *pass) readCompanions(ctx context.Context, rdb redis.Cmdable, locks []Lock, idx []int) error {
	fences := make([]*redis.StringCmd, len(idx))
	cards := make([]*redis.IntCmd, len(idx))
	pipe := rdb.Pipeline()
	for j, i := range idx {
		key := locks[i].Key
		if _, ok := p.fences[key]; ok && !p.denied[readFence].Load() {
			fences[j] = pipe.Get(ctx, protocol.FenceKey(key))
		}
		if _, ok := p.queues[key]; ok && locks[i].Format == FormatLockscope && !p.denied[readWaiters].Load() {
			cards[j] = pipe.ZCard(ctx, protocol.WaitQueueKey(key))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	var refused [readKinds]bool
	for j, i := range idx {
		l := &locks[i]
		var err error
		if c := fences[j]; c != nil {
			if l.Fence, l.HasFence, err = fenceReply(c, &refused); err != nil {
				return err
			}
		}
		if c := cards[j]; c != nil {
			if l.Waiters, l.HasWaiters, err = waitersReply(c, &refused); err != nil {
				return err
			}
		}
	}
	noteRefusals(&p.denied, refused, p.out.warn)
	return nil
}
