package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// WorkerState is what a worker is doing.
type WorkerState string

// The states a worker goes through.
const (
	Waiting WorkerState = "waiting" // in Obtain
	Holding WorkerState = "holding" // holds the lock: writing to the resource or releasing
	Working WorkerState = "working" // holds the lock and works
	Paused  WorkerState = "paused"  // frozen (a simulated GC pause): no Redis traffic, no renewals
	Crashed WorkerState = "crashed" // dead: never renews, never releases; restarted later
)

// Errors of the Controller's worker operations.
var (
	ErrNoWorker       = errors.New("demo: no such worker")
	ErrWorkerCrashed  = errors.New("demo: worker crashed")
	ErrNotPaused      = errors.New("demo: worker is not paused")
	ErrAlreadyPaused  = errors.New("demo: worker is already paused")
	ErrStopped        = errors.New("demo: stopped")
	ErrTooManyWorkers = errors.New("demo: too many workers")
)

// Timings of a worker, in TTLs of the run (Config.TTL).
const (
	workMinTTLs         = 0.05 // ordinary work: 5-20% of the TTL
	workMaxTTLs         = 0.20
	slowMinTTLs         = 1.5 // slow work: 1.5-2.5 TTLs, kept alive by the watchdog
	slowMaxTTLs         = 2.5
	slowShare           = 0.5 // share of slow sections in the slow phase
	maxHoldTTLs         = 6   // the watchdog's cap, above every planned section
	obtainTimeoutTTLs   = 20  // an Obtain that waits longer is given up and retried
	retryPauseTTLs      = 0.1 // pause after a failed Obtain
	restartAfterTTLs    = 3   // a crashed worker is restarted (by its "supervisor") after this
	instanceTimeoutTTLs = 0.2 // Redlock: how long one instance may take to answer
)

// worker is one contender. Its goroutine (one per incarnation: a crash ends it, a restart
// starts a new one) runs sections; the fields below are what Snapshot shows.
type worker struct {
	id   int
	name string // node name written into its lock values: demo-w<id>
	rng  *rand.Rand

	mu        sync.Mutex
	inc       *incarnation
	state     WorkerState
	resource  string
	token     int64
	current   *section  // the section it is in, nil while waiting
	mode      leaseMode // rw-pool: what its lease grants ("" for a lock)
	lease     *lease    // rw-pool: the lease it holds, nil while waiting
	sections  int64
	holds     int64
	stale     int64
	lost      int64
	wait      histogram
	lastError string
}

// incarnation is one life of a worker: its gate and its own clients, so that a crash or a
// pause cuts exactly this worker's Redis traffic, its watchdog's renewals included.
type incarnation struct {
	gate    *gate
	clients []redis.UniversalClient
	locks   locker
}

func (c *Controller) newIncarnation(w *worker) (*incarnation, error) {
	inc := &incarnation{gate: newGate(fmt.Errorf("%w: %s", ErrWorkerCrashed, w.name))}
	for i := range c.cfg.Servers.Addrs {
		cl := c.cfg.Servers.Dial(i)
		cl.AddHook(gateHook{inc.gate, c.instances[i]})
		// locklib releases through a WithTimeout clone of a client that does not bound reads by
		// the context, and go-redis's clone does not run the hooks added to the client (v9.23):
		// a crashed worker's release went through its dead gate and freed the lock at once. A
		// client that bounds reads by the context is used as it is, hooks and all.
		if rc, ok := cl.(*redis.Client); ok {
			rc.Options().ContextTimeoutEnabled = true
		}
		inc.clients = append(inc.clients, cl)
	}
	if c.cfg.Lock == Naive {
		inc.locks = &naiveLocker{rdb: inc.clients[0], node: w.name, acquired: func(key, value string) {
			c.checker.setOwner(key, value)
			c.crashBeforeExpire(w, key)
		}}
		return inc, nil
	}
	var locks *locklib.Client
	var err error
	if c.leases != nil {
		// rw-pool: one instance (Config.withDefaults). No fence retention: a read after the
		// document's counter expired gets a clock token above its version (locklib).
		locks = locklib.New(inc.clients[0], locklib.WithNode(w.name))
	} else {
		// Redlock's default per-instance timeout (5 ms + ttl/20) assumes servers that answer
		// in a millisecond; the embedded servers run Lua in Go, slower under load, and a
		// timed-out instance only costs validity, never safety.
		locks, err = newLockClient(c.cfg.Servers.Redlock, inc.clients, w.name, ttls(c.cfg.TTL, instanceTimeoutTTLs))
	}
	if err != nil {
		inc.close()
		return nil, err
	}
	inc.locks = libLocker{client: locks, maxHold: maxHoldTTLs * c.cfg.TTL}
	return inc, nil
}

// warmUp opens one connection per instance before the first Obtain: a Redlock attempt gives
// each instance a short timeout, and a dial inside it (slow on a loaded machine) would fail
// every first attempt.
func (inc *incarnation) warmUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, cl := range inc.clients {
		wg.Go(func() { _ = cl.Ping(ctx).Err() }) // an instance that is down is Obtain's business
	}
	wg.Wait()
}

const warmUpTimeout = 2 * time.Second

func (inc *incarnation) close() {
	if inc.locks != nil {
		inc.locks.close()
	}
	for _, cl := range inc.clients {
		_ = cl.Close()
	}
}

func (w *worker) snapshot() WorkerSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := WorkerSnapshot{
		ID: w.id, Name: w.name, State: w.state, Resource: w.resource, Mode: string(w.mode), Token: w.token,
		Holds: w.holds, StaleRejected: w.stale, LostSections: w.lost,
		WaitP50: w.wait.quantile(0.50), WaitP99: w.wait.quantile(0.99), LastError: w.lastError,
	}
	switch st, _ := w.inc.gate.current(); st {
	case gateDead:
		s.State = Crashed
	case gatePaused:
		s.State = Paused
	}
	if s.State == Waiting || s.State == Crashed {
		s.Token = 0
	}
	return s
}

func (w *worker) set(f func(w *worker)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w)
}

// runWorker is the life of one incarnation: sections until it crashes or the run stops.
func (c *Controller) runWorker(w *worker, inc *incarnation) {
	defer inc.close()
	inc.warmUp(c.ctx)
	section := c.section
	if c.leases != nil {
		section = c.leaseSection
	}
	for c.ctx.Err() == nil {
		if inc.gate.pass(c.ctx) != nil { // paused between sections, crashed, or stopping
			return
		}
		if !section(w, inc) {
			return
		}
	}
}

// workOutcome is how a section's work ended.
type workOutcome int

const (
	workDone    workOutcome = iota // worked the planned time, lock still held
	workResumed                    // frozen by a pause, now resumed: straight to the write
	workLost                       // the lock was lost (Lost() closed) before the write
	workCrashed                    // the worker crashed
	workStopped                    // the run is over
	workFenced                     // a progress write was refused (failover-replica)
)

// section is one critical section: obtain, claim the resource, work, write, release.
// It reports whether the worker goes on.
func (c *Controller) section(w *worker, inc *incarnation) bool {
	key := c.resources[w.rng.IntN(len(c.resources))]
	work := c.planWork(w.rng, c.phaseAt(time.Now()))
	w.set(func(w *worker) {
		w.state, w.resource, w.mode, w.token, w.current = Waiting, key, "", 0, nil
		w.sections++
	})
	trace := fmt.Sprintf("w%d-%d", w.id, w.sections)

	start := time.Now()
	octx, cancel := context.WithTimeout(c.ctx, obtainTimeoutTTLs*c.cfg.TTL)
	lock, err := inc.locks.obtain(octx, key, c.cfg.TTL, trace)
	cancel()
	if err != nil {
		return c.obtainFailed(w, inc, err)
	}
	wait := time.Since(start)
	sec := c.checker.open(key, w.id, lock.Token(), lock.Value(), c.phaseAt(time.Now()), wait)
	w.set(func(w *worker) {
		w.state, w.token, w.current = Holding, lock.Token(), sec
		w.holds++
		w.wait.record(wait)
	})
	if inc.gate.is(gateDead) {
		c.crashedHolding(sec, lock)
		return false
	}
	if !c.checker.claim(sec) {
		c.staleWrite(w, sec)
	}

	w.set(func(w *worker) { w.state = Working })
	var progress func() bool
	if sec.phase == FailoverReplica {
		progress = func() bool { return c.checker.write(sec) }
	}
	switch c.work(inc, lock, work, progress) {
	case workFenced:
		// The resource refused a progress write: the lock is someone else's now.
		c.staleWrite(w, sec)
		c.checker.note(sec.phase, func(k *Counters) { k.LostSections++ })
		w.set(func(w *worker) {
			w.lost++
			w.lastError = "a progress write was refused: the lock went to another worker"
		})
		c.release(lock)
		return c.ctx.Err() == nil
	case workCrashed:
		c.crashedHolding(sec, lock)
		return false
	case workStopped:
		c.release(lock)
		return false
	case workLost:
		// A careful worker checks its lock before writing and gives the section up.
		c.checker.note(sec.phase, func(k *Counters) { k.LostSections++ })
		w.set(func(w *worker) { w.lost++; w.lastError = fmt.Sprint(lock.Err()) })
		c.release(lock)
		return c.ctx.Err() == nil
	}

	w.set(func(w *worker) { w.state = Holding })
	if !c.checker.write(sec) {
		c.staleWrite(w, sec)
	}
	c.release(lock)
	return true
}

// obtainFailed handles an Obtain that failed with err: counted and retried after a pause,
// unless the worker crashed or the run is stopping. It reports whether the worker goes on.
func (c *Controller) obtainFailed(w *worker, inc *incarnation, err error) bool {
	if c.ctx.Err() != nil || inc.gate.is(gateDead) {
		return false
	}
	c.checker.note(c.phaseAt(time.Now()), func(k *Counters) { k.ObtainErrors++ })
	w.set(func(w *worker) { w.lastError = err.Error() })
	return sleepCtx(c.ctx, ttls(c.cfg.TTL, retryPauseTTLs))
}

// work holds the lock for d, watching for a pause, a crash, the lock's loss and the end of
// the run. With progress (failover-replica), the holder writes its progress every
// progressEveryTTLs, each time after checking its lock: a write the resource refuses ends
// the section (workFenced). A holder whose lock a failover lost learns it at its next
// renewal; until then those writes are the ones fencing must refuse.
//
// A pause models a stop-the-world GC pause that strikes after the worker's last "do I still
// hold the lock?" check and before its write: when it wakes it writes at once, unaware that
// time passed. That late write is what fencing (or the owner compare) must refuse.
func (c *Controller) work(inc *incarnation, lock heldLock, d time.Duration, progress func() bool) workOutcome {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var tick <-chan time.Time
	if progress != nil {
		t := time.NewTicker(ttls(c.cfg.TTL, progressEveryTTLs))
		defer t.Stop()
		tick = t.C
	}
	for {
		st, changed := inc.gate.current()
		switch st {
		case gateDead:
			return workCrashed
		case gatePaused:
			if inc.gate.pass(c.ctx) == nil {
				return workResumed
			}
			if inc.gate.is(gateDead) {
				return workCrashed
			}
			return workStopped
		}
		select {
		case <-timer.C:
			select {
			case <-lock.Lost(): // the last check before the write
				return workLost
			default:
				return workDone
			}
		case <-tick:
			select {
			case <-lock.Lost():
				return workLost
			default:
			}
			if !progress() {
				return workFenced
			}
		case <-changed:
		case <-lock.Lost():
			return workLost
		case <-c.ctx.Done():
			return workStopped
		}
	}
}

// planWork draws how long a section works in phase.
func (c *Controller) planWork(rng *rand.Rand, phase Scenario) time.Duration {
	lo, hi := workMinTTLs, workMaxTTLs
	// failover-replica: long sections too, so that some span a failover.
	if (phase == Slow || phase == FailoverReplica) && rng.Float64() < slowShare {
		lo, hi = slowMinTTLs, slowMaxTTLs
	}
	return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(c.cfg.TTL))
}

// release gives the lock back. ErrNotHeld is expected after a pause or a loss: the lock
// expired and may be someone else's now; locklib's Release never deletes another holder's
// key (the naive lock's does).
func (c *Controller) release(lock heldLock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), releaseTimeout)
	defer cancel()
	_ = lock.Release(ctx)
}

const releaseTimeout = 2 * time.Second

// crashedHolding ends a section whose worker crashed while holding its lock. The crash
// already cut the worker off Redis (its gate is dead), so the Release below reaches no
// server: it only stops the lock's watchdog goroutine in this process. For Redis the holder
// simply went silent, and the lock must expire by its TTL before anyone else gets in.
func (c *Controller) crashedHolding(sec *section, lock heldLock) {
	c.checker.crashed(sec, c.phaseAt(time.Now()))
	_ = lock.Release(context.Background())
}

func (c *Controller) staleWrite(w *worker, sec *section) {
	w.set(func(w *worker) { w.stale++ })
	c.logMark(MarkStaleRefused, w, sec.resource, "%s: late write to %s refused (%s)", w.name, sec.resource, c.staleReason(sec))
}

func (c *Controller) staleReason(sec *section) string {
	if c.checker.protection == OwnerCompare {
		return "the resource was claimed by a newer holder"
	}
	return fmt.Sprintf("stale fencing token %d", sec.token)
}

// sleepCtx sleeps d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
