package scanner

import (
	"context"
	"strings"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// A census learns which locks have companion keys (protocol.FenceKey, protocol.WaitQueueKey)
// from its own SCAN instead of asking for each lock's: SCAN walks the whole keyspace anyway,
// so widening MATCH to also return them (protocol.LockKeyOf names their lock) costs no
// lookup, while asking costs one per lock, as much as the lock's own PTTL. Only companions
// that exist are then read, after the scan. A pattern with '[' or '\' keeps the per-batch reads: the client
// filters the widened SCAN's answers by the pattern itself, and does so only for '*' and '?'.

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

// sortOut keeps the keys that match the pattern and records the companions among the rest.
func (p *pass) sortOut(keys []string) []string {
	locks := keys[:0]
	for _, k := range keys {
		if MatchGlob(p.s.opts.Pattern, k) {
			locks = append(locks, k)
			continue
		}
		lock, kind, ok := protocol.LockKeyOf(k)
		if !ok || !MatchGlob(p.s.opts.Pattern, lock) {
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

// joinCompanions reads the companions the SCAN found and fills them into locks. A lock with
// no wait queue in the SCAN has nobody waiting (HasWaiters, Waiters 0).
func (p *pass) joinCompanions(ctx context.Context, locks []Lock) error {
	if p.denied[readValue].Load() {
		return nil // a metadata-only user: the one warning already says companions are unknown
	}
	var todo []int
	for i := range locks {
		_, fence := p.fences[locks[i].Key]
		_, queue := p.queues[locks[i].Key]
		locks[i].HasWaiters = true
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
		if _, ok := p.queues[key]; ok && !p.denied[readWaiters].Load() {
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
