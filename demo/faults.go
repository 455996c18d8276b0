package demo

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fault timings, in TTLs of the run.
const (
	firstFaultTTLs    = 0.5 // into a phase before its first fault
	crashEveryTTLs    = 2   // crash phase: one holder crashes this often
	pauseEveryTTLs    = 3   // pause phase: one holder freezes this often...
	pauseMaxTTLs      = 6   // ...until another worker took its lock over, at most this long
	failoverEveryTTLs = 5   // failover phase: an instance goes down this often...
	failoverDownTTLs  = 2   // ...for this long, then comes back empty
)

// injectFaults provokes the faults of the current phase until the run stops.
func (c *Controller) injectFaults() {
	switch c.cfg.Scenario {
	case FailoverReplica:
		c.failoverReplicaLoop()
		return
	case RWPool:
		c.injectLeaseFaults()
		return
	}
	tick := time.NewTicker(c.cfg.TTL / 4)
	defer tick.Stop()
	var phase Scenario
	var next time.Time
	instance := 0
	crashBetween := true // naive lock: crash phase faults alternate, the SETNX/EXPIRE gap first
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if p := c.phaseAt(now); p != phase {
			phase, next = p, now.Add(ttls(c.cfg.TTL, firstFaultTTLs))
			c.crashArmed.Store(false) // a crash armed in one phase does not strike in the next
		}
		if now.Before(next) {
			continue
		}
		switch phase {
		case Crash:
			if c.cfg.Lock == Naive && crashBetween {
				c.crashArmed.Store(true)
				crashBetween = false
				next = now.Add(ttls(c.cfg.TTL, crashEveryTTLs))
			} else if id := c.pickHolder(""); id != 0 && c.CrashWorker(id) == nil {
				crashBetween = true
				next = now.Add(ttls(c.cfg.TTL, crashEveryTTLs))
			}
		case Pause:
			if id := c.pickHolder(""); id != 0 && c.PauseWorker(id) == nil {
				c.resumeAfterTakeover(id)
				next = now.Add(ttls(c.cfg.TTL, pauseEveryTTLs))
			}
		case Failover:
			if c.failover(instance) {
				instance = (instance + 1) % len(c.instances)
				next = now.Add(ttls(c.cfg.TTL, failoverEveryTTLs))
			}
		}
	}
}

// crashBeforeExpire crashes w, which has just won key's SETNX, when a crash is armed: the
// naive lock's EXPIRE then never reaches Redis and the key stays without a TTL. Production
// hits this window by bad luck (an OOM kill, a deploy); the demo aims for it.
func (c *Controller) crashBeforeExpire(w *worker, key string) {
	if !c.crashArmed.CompareAndSwap(true, false) || c.CrashWorker(w.id) != nil {
		return
	}
	c.logMark(MarkCrash, w, key, "%s crashed between SETNX and EXPIRE of %s: the key has no TTL", w.name, key)
}

func ttls(ttl time.Duration, n float64) time.Duration { return time.Duration(n * float64(ttl)) }

// resumeAfterTakeover ends the pause of worker id once another worker has taken its lock
// and written to the resource (that needs the frozen holder's TTL to run out first), so its
// wake-up write is the late one the resource must refuse; after pauseMaxTTLs in any case.
// For a lease (rw-pool): once leaseChecker.overtaken says its next operation is late.
func (c *Controller) resumeAfterTakeover(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	w := c.workers[id-1]
	w.mu.Lock()
	sec, l := w.current, w.lease
	w.mu.Unlock()
	overtaken := func() bool { return sec != nil && c.checker.overtaken(sec) }
	if l != nil {
		overtaken = func() bool { return c.leases.overtaken(l, time.Now()) }
	}
	c.wg.Go(func() {
		deadline := time.Now().Add(ttls(c.cfg.TTL, pauseMaxTTLs))
		for time.Now().Before(deadline) && !overtaken() {
			if !sleepCtx(c.ctx, c.cfg.TTL/20) {
				return
			}
		}
		_ = c.ResumeWorker(id)
	})
}

// pickHolder is a random worker that holds a lock (a lease of mode, unless "") and works
// (not paused, not crashed), 0 if none.
func (c *Controller) pickHolder(mode leaseMode) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int
	for _, w := range c.workers {
		if s := w.snapshot(); s.State == Working && (mode == "" || s.Mode == string(mode)) {
			ids = append(ids, w.id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	return ids[c.rng.IntN(len(ids))]
}

// failover takes instance i down for a while and brings it back empty. With servers the demo
// owns (embedded, or a test's) it stops and restarts them; otherwise it cuts every worker
// off the instance and deletes its own lock keys there before letting them back.
func (c *Controller) failover(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.instanceDown >= 0 {
		return false
	}
	addr := c.cfg.Servers.Addrs[i]
	faults := c.cfg.Servers.Faults
	if faults != nil {
		if err := faults.StopInstance(i); err != nil {
			c.logEventLocked("failover: stopping %s failed: %v", addr, err)
			return false
		}
		c.logEventLocked("failover: instance %s stopped", addr)
	} else {
		c.instances[i].set(gateDead)
		c.logEventLocked("failover: workers cut off %s", addr)
	}
	c.instanceDown = i
	c.checker.note(c.phaseAt(time.Now()), func(k *Counters) { k.Failovers++ })
	c.wg.Go(func() {
		if !sleepCtx(c.ctx, ttls(c.cfg.TTL, failoverDownTTLs)) {
			return
		}
		var err error
		if faults != nil {
			err = faults.RestartEmpty(i)
		} else {
			err = c.wipeDemoLocks(i)
			c.instances[i].set(gateOpen)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.instanceDown = -1
		if err != nil {
			c.logEventLocked("failover: bringing %s back: %v", addr, err)
			return
		}
		c.logEventLocked("failover: instance %s back, empty of demo locks", addr)
	})
	return true
}

//go:embed wipe.lua
var wipeSource string

// wipeScript deletes KEYS[1] only if it still holds ARGV[1] (compare-and-delete).
var wipeScript = redis.NewScript(wipeSource)

// wipeDemoLocks deletes, on instance i, the demo's lock keys held by demo workers: what a
// restart without persistence would have done to them. Each delete is compare-and-delete
// against the value just read, and only values written by a demo worker are touched.
func (c *Controller) wipeDemoLocks(i int) error {
	return c.eachResource(i, func(ctx context.Context, cl redis.UniversalClient, key string) error {
		val, err := cl.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		if !isDemoWorkerValue(val) {
			return nil
		}
		return wipeScript.Run(ctx, cl, []string{key}, val).Err()
	})
}
