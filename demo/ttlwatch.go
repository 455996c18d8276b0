package demo

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timings of the no-TTL watch, in TTLs of the run.
const (
	ttlWatchEveryTTLs = 0.5 // the lock keys are sampled this often
	noTTLCountTTLs    = 1   // a key without a TTL this long, same value, is counted: held forever
	noTTLDeleteTTLs   = 2   // ...and after this long the demo's "operator" deletes it by hand
)

// noTTLKey is a lock key first seen without a TTL.
type noTTLKey struct {
	value   string
	since   time.Time
	counted bool
}

// watchTTLs samples the run's lock keys on every instance and counts those its workers left
// without a TTL (no_ttl_locks): measured in Redis, not reported by the workers, so a lock that never
// makes the mistake (locklib sets value and TTL in one command) is shown never to. A key
// stuck for noTTLDeleteTTLs is deleted (compare-and-delete), as an operator paged for a
// resource nobody can take would do, so that the run goes on.
func (c *Controller) watchTTLs() {
	clients := make([]redis.UniversalClient, len(c.cfg.Servers.Addrs))
	for i := range clients {
		clients[i] = c.cfg.Servers.Dial(i)
		defer clients[i].Close()
	}
	seen := make([]map[string]*noTTLKey, len(clients))
	for i := range seen {
		seen[i] = map[string]*noTTLKey{}
	}
	tick := time.NewTicker(ttls(c.cfg.TTL, ttlWatchEveryTTLs))
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		for i, cl := range clients {
			c.sampleTTLs(cl, seen[i])
		}
	}
}

func (c *Controller) sampleTTLs(cl redis.UniversalClient, seen map[string]*noTTLKey) {
	ctx, cancel := context.WithTimeout(c.ctx, ttls(c.cfg.TTL, ttlWatchEveryTTLs))
	defer cancel()
	now := time.Now()
	// One round trip for every key: each command still has its own result.
	pipe := cl.Pipeline()
	gets := make([]*redis.StringCmd, len(c.resources))
	pttls := make([]*redis.Cmd, len(c.resources))
	for i, key := range c.resources {
		gets[i] = pipe.Get(ctx, key)
		pttls[i] = pipe.Do(ctx, "PTTL", key) // raw: -1 is "no TTL", -2 "no key"
	}
	_, _ = pipe.Exec(ctx)
	for i, key := range c.resources {
		get := gets[i]
		ms, err := pttls[i].Int64()
		if err != nil { // the instance is down (failover) or the run is stopping: next time
			continue
		}
		// Only a value this run set counts: a key another client left without a TTL (a
		// foreign lock under a demo key) is neither this run's failure nor its to delete.
		if ms != -1 || get.Err() != nil || get.Val() != c.checker.lastOwner(key) {
			delete(seen, key)
			continue
		}
		v := get.Val()
		k := seen[key]
		if k == nil || k.value != v {
			seen[key] = &noTTLKey{value: v, since: now}
			continue
		}
		stuck := now.Sub(k.since)
		if !k.counted && stuck >= ttls(c.cfg.TTL, noTTLCountTTLs) {
			k.counted = true
			c.checker.note(c.phaseAt(now), func(k *Counters) { k.NoTTLLocks++ })
			c.logEvent("%s has no TTL: held forever by a holder that is gone", key)
		}
		if stuck >= ttls(c.cfg.TTL, noTTLDeleteTTLs) && wipeScript.Run(ctx, cl, []string{key}, v).Err() == nil {
			delete(seen, key)
			c.logEvent("%s deleted by hand after %s without a TTL (the operator, paged)", key, stuck.Round(time.Millisecond))
		}
	}
}
