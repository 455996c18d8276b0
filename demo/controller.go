package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// Controller runs one demo: the workers, the scenario's faults and the checker. The UI reads
// it with Snapshot and provokes faults with PauseWorker, ResumeWorker, CrashWorker and
// AddWorker. Every method is safe for concurrent use.
type Controller struct {
	cfg        Config
	protection Protection
	resources  []string   // the lock keys, lock:demo:<name>
	phases     []Scenario // the cycle of phases (one for a single scenario)
	instances  []*gate    // per instance: cut when the failover cannot stop the server itself
	checker    *checker
	leases     *leaseChecker // rw-pool: the document, the pool and their judge; nil otherwise
	started    time.Time

	ctx    context.Context // ends at Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed when Config.Duration has passed

	mu           sync.Mutex
	rng          *rand.Rand // fault picks
	workers      []*worker
	events       []Event
	eventSeq     uint64 // Seq of the last event
	stopped      bool
	stoppedAt    time.Time
	instanceDown int // index of the instance down for a failover, -1 when none
	// failover-replica: the master the workers follow, the one before the last switch, and
	// the one being failed over now ("" when none)
	master, previousMaster, failingOver string
	stopOnce                            sync.Once

	// crashArmed: the next naive worker to win a SETNX crashes before its EXPIRE (the crash
	// scenario's fault that shows the naive lock's first mistake).
	crashArmed atomic.Bool
}

// Event is a notable moment of the run (a fault, a refused write), for the UI's log.
type Event struct {
	Seq  uint64 // 1 for the run's first event, then counting up: what a reader has seen
	At   time.Time
	Text string
	// Mark is what the event marks on the timeline of the lock Resource, for Worker (the
	// console's detail view draws it); "" for an event about no lock's holder.
	Mark     Mark
	Worker   string // the worker's name (its node in lock values)
	Resource string // the lock key
}

// Mark is a kind of moment in the life of a lock's holder.
type Mark string

const (
	MarkCrash        Mark = "crash"         // the worker crashed holding the lock
	MarkPause        Mark = "pause"         // the worker froze holding the lock
	MarkStaleRefused Mark = "stale-refused" // the resource refused a late write of the worker
)

const keptEvents = 50

// resourceNames name the protected resources; keys are lock:demo:<name>.
var resourceNames = []string{"orders", "payments", "inventory", "shipping", "invoices", "accounts", "reports", "emails"}

// ResourceKey is the lock key of the i-th resource (0-based) for workers taking lock: the
// naive lock's keys are lock:naive:<name>, so that both runs of --compare share a server.
func ResourceKey(lock Lock, i int) string {
	prefix := "lock:demo:"
	if lock == Naive {
		prefix = "lock:naive:"
	}
	if i < len(resourceNames) {
		return prefix + resourceNames[i]
	}
	return fmt.Sprintf("%sres-%d", prefix, i+1)
}

// Start checks cfg, starts the workers and the scenario, and returns at once. The run goes on
// until Stop; with a Duration, Done() closes when it has passed.
func Start(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	c := &Controller{
		cfg:          cfg,
		protection:   FencingTokens,
		phases:       phasesFor(cfg.Scenario, cfg.failoverPossible()),
		rng:          rand.New(rand.NewPCG(seed, 0)),
		done:         make(chan struct{}),
		instanceDown: -1,
	}
	switch {
	case cfg.Lock == Naive:
		c.protection = Unprotected
	case cfg.Servers.Redlock:
		// Redlock has no safe fencing token (Lock.Token() is 0): the resource compares owners.
		c.protection = OwnerCompare
	}
	c.checker = newChecker(c.protection)
	if cfg.Scenario == RWPool {
		c.leases = newLeaseChecker(c.checker, cfg.Permits)
		c.resources = []string{DocKey, PoolKey}
	} else {
		for i := range cfg.Resources {
			c.resources = append(c.resources, ResourceKey(cfg.Lock, i))
		}
	}
	for _, addr := range cfg.Servers.Addrs {
		c.instances = append(c.instances, newGate(fmt.Errorf("demo: instance %s is cut off (failover)", addr)))
	}
	if err := c.probe(); err != nil {
		return nil, err
	}
	if r := cfg.Servers.Replication; r != nil {
		if c.master, err = r.Master(context.Background()); err != nil {
			return nil, err
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.started = time.Now()
	for range cfg.Workers {
		if _, err := c.AddWorker(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	c.wg.Go(c.injectFaults)
	c.wg.Go(c.watchTTLs)
	if cfg.Duration > 0 {
		c.wg.Go(func() {
			if sleepCtx(c.ctx, cfg.Duration) {
				close(c.done)
			}
		})
	}
	return c, nil
}

// probe checks that enough instances answer for locks to be taken at all.
func (c *Controller) probe() error {
	n := len(c.cfg.Servers.Addrs)
	need := 1
	if c.cfg.Servers.Redlock {
		need = n/2 + 1
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cl := c.cfg.Servers.Dial(i)
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			errs[i] = cl.Ping(ctx).Err()
		})
	}
	wg.Wait()
	ok := 0
	var firstErr error
	for i, err := range errs {
		if err == nil {
			ok++
		} else if firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", c.cfg.Servers.Addrs[i], err)
		}
	}
	if ok < need {
		return fmt.Errorf("demo: %d of %d servers answer, %d needed: %w", ok, n, need, firstErr)
	}
	return nil
}

// newLockClient is the locklib client of one worker incarnation; the instance timeout is a
// Redlock option only.
func newLockClient(redlock bool, clients []redis.UniversalClient, node string, instanceTimeout time.Duration) (*locklib.Client, error) {
	if redlock {
		return locklib.NewRedlock(clients, locklib.WithNode(node), locklib.WithInstanceTimeout(instanceTimeout))
	}
	return locklib.New(clients[0], locklib.WithNode(node)), nil
}

// Done is closed when the run's Duration has passed (never for a run without one).
func (c *Controller) Done() <-chan struct{} { return c.done }

// Label says which server the demo uses, for a status bar.
func (c *Controller) Label() string { return c.cfg.Servers.Label }

// Addrs are the target's instance addresses.
func (c *Controller) Addrs() []string { return append([]string(nil), c.cfg.Servers.Addrs...) }

// Resources are the lock keys the workers contend for.
func (c *Controller) Resources() []string { return append([]string(nil), c.resources...) }

// phaseAt is the phase of the run at t.
func (c *Controller) phaseAt(t time.Time) Scenario {
	if len(c.phases) == 1 {
		return c.phases[0]
	}
	i := int(t.Sub(c.started)/c.cfg.PhaseLength) % len(c.phases)
	return c.phases[i]
}

// AddWorker starts one more worker and returns its id.
func (c *Controller) AddWorker() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return 0, ErrStopped
	}
	if len(c.workers) >= MaxWorkers {
		return 0, fmt.Errorf("%w: at most %d", ErrTooManyWorkers, MaxWorkers)
	}
	id := len(c.workers) + 1
	w := &worker{id: id, name: fmt.Sprintf("demo-w%d", id), state: Waiting,
		rng: rand.New(rand.NewPCG(c.rng.Uint64(), uint64(id)))}
	inc, err := c.newIncarnation(w)
	if err != nil {
		return 0, err
	}
	w.inc = inc
	c.workers = append(c.workers, w)
	c.wg.Go(func() { c.runWorker(w, inc) })
	return id, nil
}

// worker finds a worker by id. Call with c.mu held.
func (c *Controller) worker(id int) (*worker, error) {
	if c.stopped {
		return nil, ErrStopped
	}
	if id < 1 || id > len(c.workers) {
		return nil, fmt.Errorf("%w: %d", ErrNoWorker, id)
	}
	return c.workers[id-1], nil
}

// PauseWorker freezes worker id like a stop-the-world GC pause: its Redis traffic stops at
// once (its watchdog's renewals too), and the worker stops at its next step. If it holds a
// lock, it wakes, on ResumeWorker, straight into its write.
func (c *Controller) PauseWorker(id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.worker(id)
	if err != nil {
		return err
	}
	switch st, _ := w.inc.gate.current(); st {
	case gateDead:
		return fmt.Errorf("%w: %s", ErrWorkerCrashed, w.name)
	case gatePaused:
		return fmt.Errorf("%w: %s", ErrAlreadyPaused, w.name)
	}
	w.inc.gate.set(gatePaused)
	c.checker.note(c.phaseAt(time.Now()), func(k *Counters) { k.Pauses++ })
	c.logMarkLocked(MarkPause, w, heldResource(w), "%s paused%s", w.name, holdingNote(w))
	return nil
}

// ResumeWorker ends worker id's pause.
func (c *Controller) ResumeWorker(id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.worker(id)
	if err != nil {
		return err
	}
	if !w.inc.gate.is(gatePaused) {
		return fmt.Errorf("%w: %s", ErrNotPaused, w.name)
	}
	w.inc.gate.set(gateOpen)
	c.logEventLocked("%s resumed", w.name)
	return nil
}

// CrashWorker kills worker id: from now on it neither renews nor releases anything; a lock it
// holds stays in Redis until its TTL runs out. Like a supervised process, it is restarted
// (fresh, holding nothing) a few TTLs later.
func (c *Controller) CrashWorker(id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.worker(id)
	if err != nil {
		return err
	}
	inc := w.inc
	if inc.gate.is(gateDead) {
		return fmt.Errorf("%w: %s", ErrWorkerCrashed, w.name)
	}
	inc.gate.set(gateDead)
	restartIn := restartAfterTTLs * c.cfg.TTL
	c.checker.note(c.phaseAt(time.Now()), func(k *Counters) { k.Crashes++ })
	c.logMarkLocked(MarkCrash, w, heldResource(w), "%s crashed%s", w.name, holdingNote(w))
	c.wg.Go(func() {
		if sleepCtx(c.ctx, restartIn) {
			c.restart(w)
		}
	})
	return nil
}

// restart gives a crashed worker a new life.
func (c *Controller) restart(w *worker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	inc, err := c.newIncarnation(w)
	if err != nil {
		c.logEventLocked("%s could not restart: %v", w.name, err)
		return
	}
	w.set(func(w *worker) { w.inc, w.state, w.mode, w.token, w.current, w.lease = inc, Waiting, "", 0, nil, nil })
	c.logEventLocked("%s restarted", w.name)
	c.wg.Go(func() { c.runWorker(w, inc) })
}

// heldResource is the key of the lock w holds, "" when none.
func heldResource(w *worker) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == Holding || w.state == Working {
		return w.resource
	}
	return ""
}

// holdingNote is " holding <key>" when w holds a lock.
func holdingNote(w *worker) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case (w.state == Holding || w.state == Working) && w.token == 0: // the naive lock, Redlock
		return " holding " + w.resource
	case w.state == Holding || w.state == Working:
		return fmt.Sprintf(" holding %s (token %d)", w.resource, w.token)
	}
	return ""
}

func (c *Controller) logEvent(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logEventLocked(format, args...)
}

func (c *Controller) logEventLocked(format string, args ...any) {
	c.addEventLocked(Event{Text: fmt.Sprintf(format, args...)})
}

// logMark logs an event that marks w's holding of resource ("": w held nothing, no mark).
func (c *Controller) logMark(mark Mark, w *worker, resource, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logMarkLocked(mark, w, resource, format, args...)
}

func (c *Controller) logMarkLocked(mark Mark, w *worker, resource, format string, args ...any) {
	ev := Event{Text: fmt.Sprintf(format, args...)}
	if resource != "" {
		ev.Mark, ev.Worker, ev.Resource = mark, w.name, resource
	}
	c.addEventLocked(ev)
}

func (c *Controller) addEventLocked(ev Event) {
	c.eventSeq++
	ev.Seq, ev.At = c.eventSeq, time.Now()
	c.events = append(c.events, ev)
	if len(c.events) > keptEvents {
		c.events = append(c.events[:0], c.events[len(c.events)-keptEvents:]...)
	}
}

// Stop ends the run: workers release what they hold, faults are undone where the demo can
// (paused workers and cut instances are let through so that releases reach Redis), and every
// goroutine and client is gone when it returns. It returns the run's summary; calling it
// again returns the same figures.
func (c *Controller) Stop() Summary {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped = true
		c.stoppedAt = time.Now()
		c.cancel()
		for _, w := range c.workers {
			if w.inc.gate.is(gatePaused) {
				w.inc.gate.set(gateOpen)
			}
		}
		for _, g := range c.instances {
			g.set(gateOpen)
		}
		c.mu.Unlock()
		c.wg.Wait()
	})
	return c.Summary()
}

// elapsed is the run time so far (up to Stop).
func (c *Controller) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.stoppedAt.Sub(c.started)
	}
	return time.Since(c.started)
}
