package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// The rw-pool scenario: workers read a document (many at once, under read leases of a
// read-write lock), write it (alone, under the write lease), or use a pool of N slots (under
// the permits of a lease semaphore), while holders crash and freeze. The leaseChecker
// (leases.go) owns the document and the pool and judges every operation.

// The rw-pool scenario's keys: the document's read-write lock and the pool's semaphore.
const (
	DocKey  = "lock:demo:doc"
	PoolKey = "lock:demo:pool"
)

// DefaultPermits is the pool's size unless Config.Permits says otherwise.
const DefaultPermits = 3

// What a rw-pool section takes: read-mostly (a write in seven sections), a permit in four.
const (
	readShare  = 0.6
	writeShare = 0.15
)

// Timings of the rw-pool scenario, in TTLs of the run.
const (
	leaseFaultEveryTTLs = 1.5 // a fault this often: pauses and crashes in turn
)

// pauseModes are the holders the rw-pool scenario freezes in turn (the fault between two
// pauses is a crash of any holder): a writer, whose late write a reader or writer granted
// after it makes stale; a permit holder, whose late use comes after its deadline; a reader,
// whose late read a writer granted after it makes stale.
var pauseModes = []leaseMode{modeWrite, modePermit, modeRead}

func drawMode(rng *rand.Rand) leaseMode {
	switch x := rng.Float64(); {
	case x < readShare:
		return modeRead
	case x < readShare+writeShare:
		return modeWrite
	}
	return modePermit
}

// obtainLease takes a lease of mode: a read or a write level of the read-write lock at key,
// or one of the permits of the semaphore at key. The watchdog renews it, as Obtain's.
func (l libLocker) obtainLease(ctx context.Context, mode leaseMode, key string, ttl time.Duration, trace string, permits int) (*locklib.Lock, error) {
	opts := []locklib.LockOption{locklib.WithTrace(trace), locklib.WithWatchdog(), locklib.WithMaxHold(l.maxHold)}
	switch mode {
	case modeRead:
		return l.client.ObtainRead(ctx, key, ttl, opts...)
	case modeWrite:
		return l.client.ObtainWrite(ctx, key, ttl, opts...)
	}
	return l.client.Semaphore(key, permits).Acquire(ctx, ttl, opts...)
}

// leaseSection is one section of the rw-pool scenario: a lease of a mode drawn at random, its
// first operation, work during which the lease's deadline in Redis is confirmed every
// progressEveryTTLs, its last operation, the release. It reports whether the worker goes on.
//
// A pause strikes, as in the pause scenario, between the last confirmation and the next
// operation: the holder wakes and acts at once, with the deadline it knew.
func (c *Controller) leaseSection(w *worker, inc *incarnation) bool {
	mode := drawMode(w.rng)
	key := PoolKey
	if mode != modePermit {
		key = DocKey
	}
	work := c.planWork(w.rng, RWPool)
	w.set(func(w *worker) {
		w.state, w.resource, w.mode, w.token, w.lease = Waiting, key, mode, 0, nil
		w.sections++
	})
	trace := fmt.Sprintf("w%d-%d", w.id, w.sections)

	start := time.Now()
	octx, cancel := context.WithTimeout(c.ctx, obtainTimeoutTTLs*c.cfg.TTL)
	// rw-pool runs on locklib only (Config.withDefaults).
	lock, err := inc.locks.(libLocker).obtainLease(octx, mode, key, c.cfg.TTL, trace, c.cfg.Permits)
	cancel()
	if err != nil {
		return c.obtainFailed(w, inc, err)
	}
	granted := time.Now()
	l := c.leases.grant(w.id, mode, lock.Token(), lock.Value(), RWPool, granted.Sub(start), granted)
	w.set(func(w *worker) {
		w.state, w.token, w.lease = Holding, lock.Token(), l
		w.holds++
		w.wait.record(granted.Sub(start))
	})
	if inc.gate.is(gateDead) {
		c.crashedLease(l, lock)
		return false
	}
	if !c.confirmLease(l, lock) {
		return c.leaseLost(w, l, lock, "the lease was gone before its first operation")
	}
	c.leaseAct(w, l)

	w.set(func(w *worker) { w.state = Working })
	switch c.work(inc, lock, work, func() bool { return c.confirmLease(l, lock) }) {
	case workFenced:
		return c.leaseLost(w, l, lock, "Redis says the lease is gone")
	case workCrashed:
		c.crashedLease(l, lock)
		return false
	case workStopped:
		c.endLease(l, lock)
		return false
	case workLost:
		return c.leaseLost(w, l, lock, fmt.Sprint(lock.Err()))
	}
	w.set(func(w *worker) { w.state = Holding })
	c.leaseAct(w, l)
	c.endLease(l, lock)
	return true
}

// confirmLease asks Redis how long l's lease has left and records its deadline, measured
// from before asking; false when Redis says it is gone. A request that fails (the worker
// crashed, the server is slow) confirms nothing and says nothing.
func (c *Controller) confirmLease(l *lease, lock *locklib.Lock) bool {
	before := time.Now()
	left, err := lock.TTL(c.ctx)
	switch {
	case err != nil:
		return true
	case left <= 0:
		return false
	}
	c.leases.confirm(l, before.Add(left))
	return true
}

// leaseAct is one operation of l's holder on its resource; a refusal is logged on the
// worker and in the events.
func (c *Controller) leaseAct(w *worker, l *lease) {
	if c.leases.act(l, time.Now()) {
		return
	}
	w.set(func(w *worker) { w.stale++ })
	what := map[leaseMode]string{modeRead: "read of", modeWrite: "write to", modePermit: "use of"}[l.mode]
	reason := fmt.Sprintf("stale %s token %d", l.mode, l.token)
	if l.mode == modePermit {
		reason = fmt.Sprintf("permit %d past its lease's deadline", l.token)
	}
	c.logMark(MarkStaleRefused, w, l.mode.key(), "%s: late %s %s refused (%s)", w.name, what, l.mode.key(), reason)
}

// key is the lock key of a lease of mode.
func (m leaseMode) key() string {
	if m == modePermit {
		return PoolKey
	}
	return DocKey
}

// leaseLost ends a section whose lease went before its last operation: a careful holder
// gives it up.
func (c *Controller) leaseLost(w *worker, l *lease, lock *locklib.Lock, why string) bool {
	c.checker.note(RWPool, func(k *Counters) { k.LostSections++ })
	w.set(func(w *worker) { w.lost++; w.lastError = why })
	c.endLease(l, lock)
	return c.ctx.Err() == nil
}

// endLease releases l's lock and records how the lease ended: released, or lost when the
// release found it gone (it ran out first). The lease is surely held until the release is
// sent.
func (c *Controller) endLease(l *lease, lock *locklib.Lock) {
	releasing := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), releaseTimeout)
	defer cancel()
	how := leaseReleased
	if err := lock.Release(ctx); err != nil || lock.Err() != nil {
		how = leaseLost
	}
	c.leases.end(l, releasing, how)
}

// crashedLease ends a section whose worker crashed holding l: the lease stays in Redis until
// its deadline (the Release reaches no server: it only stops the watchdog in this process).
func (c *Controller) crashedLease(l *lease, lock *locklib.Lock) {
	c.leases.end(l, time.Now(), leaseCrashed)
	_ = lock.Release(context.Background())
}

// injectLeaseFaults is the rw-pool scenario's faults: every leaseFaultEveryTTLs a pause (of
// a writer, a permit holder, a reader in turn, or of any holder when none of that mode
// works now) or a crash of any holder, alternately.
func (c *Controller) injectLeaseFaults() {
	tick := time.NewTicker(c.cfg.TTL / 4)
	defer tick.Stop()
	next := time.Now().Add(ttls(c.cfg.TTL, firstFaultTTLs))
	pauses, crash := 0, false
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		if time.Now().Before(next) {
			continue
		}
		if crash {
			if id := c.pickHolder(""); id != 0 && c.CrashWorker(id) == nil {
				crash, next = false, time.Now().Add(ttls(c.cfg.TTL, leaseFaultEveryTTLs))
			}
			continue
		}
		mode := pauseModes[pauses%len(pauseModes)]
		id := c.pickHolder(mode)
		if id == 0 {
			id = c.pickHolder("")
		}
		if id != 0 && c.PauseWorker(id) == nil {
			c.resumeAfterTakeover(id)
			pauses++
			crash, next = true, time.Now().Add(ttls(c.cfg.TTL, leaseFaultEveryTTLs))
		}
	}
}

//go:embed leasecleanup.lua
var leaseCleanupSource string

// leaseCleanupScript removes this run's leases from a lease set and, once none is left, its
// companions.
var leaseCleanupScript = redis.NewScript(leaseCleanupSource)

// removeLeasesOn removes, on instance i, what the rw-pool run left: the leases of its crashed
// workers (they would stay until their deadlines) and the companions of each lease set no
// one holds any more, the semaphore's limit (which has no TTL) included.
func (c *Controller) removeLeasesOn(i int) error {
	values := c.leases.leftBehind()
	return c.eachResource(i, func(ctx context.Context, cl redis.UniversalClient, key string) error {
		companions := protocol.CompanionKeys(key)
		keys := append(append([]string{key}, companions[:]...), protocol.LimitKey(key))
		err := leaseCleanupScript.Run(ctx, cl, keys, values...).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		return err
	})
}
