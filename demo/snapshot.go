package demo

import "time"

// Snapshot is the state of a run at one moment, for the UI.
type Snapshot struct {
	Server       string   // which server is in use (Servers.Label)
	Addrs        []string // the instances
	InstanceDown int      // index in Addrs of the instance down for a failover, -1 when none
	// failover-replica: the master the workers follow, the one before the last switch ("" before
	// any), and the master being failed over now ("" when none)
	Master, PreviousMaster, FailingOver string
	Lock                                Lock       // the workers' lock
	Scenario                            Scenario   // the scenario asked for
	Phase                               Scenario   // the phase running now (= Scenario unless mixed)
	Protection                          Protection // how the resource refuses stale writers
	TTL                                 time.Duration
	Elapsed                             time.Duration
	Duration                            time.Duration // 0: until stopped
	Resources                           []string      // lock keys
	Permits                             int           // rw-pool: the pool's size (0 in the other scenarios)
	PoolInUse                           int           // rw-pool: the pool's slots in use now
	Workers                             []WorkerSnapshot
	Counters                            Counters // the checker's figures for the whole run
	WaitP50                             time.Duration
	WaitP99                             time.Duration
	Events                              []Event // recent notable events, oldest first
	Stopped                             bool
}

// WorkerSnapshot is one worker in a Snapshot.
type WorkerSnapshot struct {
	ID            int
	Name          string // its node name in lock values, demo-w<id>
	State         WorkerState
	Resource      string // the key it waits for or holds ("" before its first section)
	Mode          string // rw-pool: what its lease grants, "read", "write" or "permit" ("" for a lock)
	Token         int64  // fencing token of the lock it holds (0 when none, or Redlock)
	Holds         int64  // locks obtained
	StaleRejected int64  // its writes the resource refused as stale
	LostSections  int64  // sections it gave up because its lock was lost
	WaitP50       time.Duration
	WaitP99       time.Duration
	LastError     string // the last Obtain error or loss reason
}

// snapshotEvents is how many recent events a Snapshot carries.
const snapshotEvents = 10

// Snapshot returns the current state. It is cheap (no Redis traffic) and safe to call often.
func (c *Controller) Snapshot() Snapshot {
	counters, wait := c.checker.totals()
	s := Snapshot{
		Server:     c.cfg.Servers.Label,
		Addrs:      c.Addrs(),
		Lock:       c.cfg.Lock,
		Scenario:   c.cfg.Scenario,
		Protection: c.protection,
		TTL:        c.cfg.TTL,
		Duration:   c.cfg.Duration,
		Resources:  c.Resources(),
		Counters:   counters,
		WaitP50:    wait.quantile(0.50),
		WaitP99:    wait.quantile(0.99),
		Elapsed:    c.elapsed(),
	}
	s.Phase = c.phaseAt(c.started.Add(s.Elapsed))
	if c.leases != nil {
		s.Permits, s.PoolInUse = c.cfg.Permits, c.leases.poolInUse(time.Now())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.InstanceDown = c.instanceDown
	s.Master, s.PreviousMaster, s.FailingOver = c.master, c.previousMaster, c.failingOver
	s.Stopped = c.stopped
	for _, w := range c.workers {
		s.Workers = append(s.Workers, w.snapshot())
	}
	s.Events = append(s.Events, c.events[max(0, len(c.events)-snapshotEvents):]...)
	return s
}
