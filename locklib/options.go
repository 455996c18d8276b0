package locklib

import (
	"os"
	"time"
)

// Option configures a Client made by New or NewRedlock. Every Option is also a RedlockOption.
type Option interface {
	RedlockOption
	forEveryStore()
}

// RedlockOption configures a Client made by NewRedlock: an Option, or one of the
// Redlock-only options (WithInstanceTimeout, WithDrift), which New does not accept.
type RedlockOption interface {
	apply(*config)
}

// option is an Option: it applies to every store.
type option func(*config)

func (o option) apply(c *config) { o(c) }
func (option) forEveryStore()    {}

// redlockOption is a RedlockOption only.
type redlockOption func(*config)

func (o redlockOption) apply(c *config) { o(c) }

// config is a Client's configuration; fields are set by Options.
type config struct {
	node        string            // written into every value
	backoffBase time.Duration     // first back-off step of a waiting Obtain
	backoffCap  time.Duration     // largest back-off step: what a lost wake-up can cost at most
	observer    func(Observation) // nil: no observations
	tracer      Tracer            // nil: no spans
	events      bool              // publish lifecycle events on protocol.EventsChannel
	// fenceRetention is how long a fencing counter outlives each acquisition at least
	// (WithFenceRetention; 0: as long as the lock's ttl).
	fenceRetention time.Duration
	// replicas and replicaTimeout are WithReplicas' (0 replicas: no WAIT).
	replicas       int
	replicaTimeout time.Duration
	redlock        redlockConfig // NewRedlock only: WithInstanceTimeout, WithDrift (Redlock block below)
}

const (
	defaultBackoffBase = 5 * time.Millisecond
	defaultBackoffCap  = 250 * time.Millisecond
	// releaseTimeout bounds Release and a leaving waiter's clean-up, which run even when
	// the caller's context is already cancelled.
	releaseTimeout = 2 * time.Second
	// publishTimeout bounds the best-effort publishing of events sent from Go (lost,
	// renew_failed), in the background: a stalled server must never hold up the watchdog,
	// a Refresh or a Release.
	publishTimeout = 500 * time.Millisecond
)

func newConfig[O RedlockOption](opts []O) config {
	node, err := os.Hostname()
	if err != nil || node == "" {
		node = "unknown"
	}
	cfg := config{node: node, backoffBase: defaultBackoffBase, backoffCap: defaultBackoffCap, events: true}
	for _, o := range opts {
		o.apply(&cfg)
	}
	return cfg
}

// WithNode sets the node name written into lock values (default: the hostname).
func WithNode(node string) Option { return option(func(c *config) { c.node = node }) }

// WithBackoff sets the waiting Obtain's fallback poll: exponential from base up to cap,
// each step drawn uniformly from [0, step] (full jitter). Wake-up messages make most
// hand-offs immediate; a lost one costs at most one step. Values below 1 ms are raised to it.
func WithBackoff(base, cap time.Duration) Option {
	return option(func(c *config) {
		c.backoffBase = max(base, time.Millisecond)
		c.backoffCap = max(cap, c.backoffBase)
	})
}

// WithObserver passes f an Observation for every acquire, wait, renewal, release and loss,
// with durations, for metrics. f is called synchronously on the goroutine that did the step,
// so it must be fast and must not block.
func WithObserver(f func(Observation)) Option { return option(func(c *config) { c.observer = f }) }

// WithTracer runs t around every Obtain, TryObtain and Release, with the caller's context:
// for spans (locklib/extra/lockotel.NewTracer makes OpenTelemetry ones). See Tracer.
func WithTracer(t Tracer) Option { return option(func(c *config) { c.tracer = t }) }

// WithEvents turns publishing of lifecycle events on protocol.EventsChannel on (the default) or off.
// Most events are published from inside the lock scripts, so they cost no extra round
// trip; docs/locklib.md gives the measured cost.
func WithEvents(on bool) Option { return option(func(c *config) { c.events = on }) }

// WithFenceRetention keeps a key's fencing counter (protocol.FenceKey) for at least d after
// each acquisition, instead of as long as the lock's ttl: one more key, about 160 bytes,
// per distinct key locked in the last d. Tokens are the server clock in microseconds, and
// the counter carries them past the clock only while it exists, so it is what keeps them
// increasing when the server's clock steps back (or a failover lands on a server whose clock
// is behind) by more than the time since the last acquisition; d is how long after an
// acquisition that stays covered (docs/value-format.md, "Fencing tokens"). Redlock, which
// has no fencing tokens, ignores it.
func WithFenceRetention(d time.Duration) Option {
	return option(func(c *config) { c.fenceRetention = max(d, 0) })
}

// WithReplicas makes every acquisition and every renewal wait until n replicas of the
// master that took it confirm the write (WAIT n timeout), so that a failover to any of them
// keeps the lock. An Obtain or TryObtain that fewer replicas confirm within timeout releases
// the lock again and fails at once, with an error that is ErrNotObtained and ErrNotReplicated
// (a *ReplicationError says how many confirmed); it is not retried: the replicas are missing
// or lagging, which waiting for the lock does not mend, and the caller knows better whether
// to go on without them. A renewal (Refresh, the watchdog) that fewer confirm fails with
// ErrNotReplicated and does not move the lock's validity: it ends where the last confirmed
// renewal put it. Keep timeout well below the watchdog's interval (ttl/3), which bounds each
// renewal, WAIT included. timeout is raised to 1 ms at least (WAIT 0 would wait for ever);
// n <= 0 turns it off. It needs a *redis.Client (one server, or Sentinel's failover client) or a
// *redis.ClusterClient and Redis 6.0 or later; over a redis.Ring every Obtain fails with
// ErrInvalid, and NewRedlock refuses it. What it does and does not promise: docs/locklib.md,
// "Sentinel, replicas and WAIT", and docs/guarantees.md, "Replication and WAIT".
func WithReplicas(n int, timeout time.Duration) Option {
	return option(func(c *config) { c.replicas, c.replicaTimeout = max(n, 0), max(timeout, time.Millisecond) })
}

// ---- Redlock-only options: NewRedlock takes them, New does not compile with them. Owned
// by the Redlock part, see redlock.go and docs/redlock.md. ----

// WithInstanceTimeout bounds how long a Redlock operation waits for each instance's answer
// (default: 5 ms + ttl/20 for acquire and refresh, 250 ms for release and TTL). An instance
// that does not answer in time counts as failed for that operation, so a dead or frozen
// instance costs at most this much. d <= 0 restores the default.
func WithInstanceTimeout(d time.Duration) RedlockOption {
	return redlockOption(func(c *config) { c.redlock.instanceTimeout = max(d, 0) })
}

// WithDrift sets Redlock's clock drift allowance, subtracted from every lock's validity:
// factor*ttl + fixed (default 0.01*ttl + 2 ms). NewRedlock refuses a factor outside [0, 1)
// or a negative fixed part.
func WithDrift(factor float64, fixed time.Duration) RedlockOption {
	return redlockOption(func(c *config) {
		c.redlock.driftSet, c.redlock.driftFactor, c.redlock.driftFixed = true, factor, fixed
	})
}

// ---- end of Redlock options ----

// LockOption configures one Obtain or TryObtain.
type LockOption func(*lockConfig)

type lockConfig struct {
	trace          string
	watchdog       bool
	maxRenewals    int // <= 0: no count cap
	maxRenewalsSet bool
	maxHold        time.Duration // 0: no hold cap
	reentrant      bool
	owner          string // Reentrant: whose levels these are
}

// defaultMaxRenewals is the watchdog's cap when neither WithMaxRenewals nor WithMaxHold is given.
const defaultMaxRenewals = 10

func newLockConfig(opts []LockOption) lockConfig {
	var lc lockConfig
	if len(opts) > 0 {
		lc = applyLockOptions(opts)
	}
	if !lc.maxRenewalsSet && lc.maxHold == 0 {
		lc.maxRenewals = defaultMaxRenewals
	}
	return lc
}

// applyLockOptions is apart from newLockConfig so that only a call with options pays for
// the config the options point to (it moves to the heap).
func applyLockOptions(opts []LockOption) lockConfig {
	var lc lockConfig
	for _, o := range opts {
		o(&lc)
	}
	return lc
}

// WithTrace writes a trace id (e.g. the request's) into the value, so an inspector can
// tell which request holds the lock.
func WithTrace(id string) LockOption { return func(l *lockConfig) { l.trace = id } }

// WithWatchdog renews the lock every ttl/3 until Release, until a cap is reached (default
// 10 renewals; see WithMaxRenewals and WithMaxHold) or until a renewal is refused.
func WithWatchdog() LockOption { return func(l *lockConfig) { l.watchdog = true } }

// WithMaxRenewals caps the watchdog at n renewals; n <= 0 removes the count cap (then only
// WithMaxHold, if given, stops it). After the cap the lock expires at the end of its TTL
// unless refreshed, and Lost() closes then.
func WithMaxRenewals(n int) LockOption {
	return func(l *lockConfig) { l.maxRenewals, l.maxRenewalsSet = n, true }
}

// WithMaxHold caps how long the watchdog keeps the lock: renewals never extend it beyond
// d after acquisition. Given alone, it replaces the default count cap.
func WithMaxHold(d time.Duration) LockOption { return func(l *lockConfig) { l.maxHold = d } }

// Reentrant makes the lock re-entrant for owner: an Obtain by the same Client with the same
// owner enters it again, which increments a count; each Release decrements it and the last
// one deletes the key. Any other owner waits as for a plain lock. The owner is named at every
// call, not carried in the context, so goroutines that share a context do not silently share
// the lock; an empty owner is refused with ErrInvalid.
func Reentrant(owner string) LockOption {
	return func(l *lockConfig) { l.reentrant, l.owner = true, owner }
}
