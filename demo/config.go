package demo

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBadConfig is wrapped by every error about a Config the demo cannot run.
var ErrBadConfig = errors.New("demo: bad configuration")

// Lock is the lock the workers take.
type Lock string

// The locks of `lockscope demo --lock`.
const (
	LockLib Lock = "locklib" // this project's library
	// Naive is the textbook mistakes: SETNX then EXPIRE, a release that DELs without checking
	// the owner, a renewal that GETs then EXPIREs, no fencing token (demo/naive.go).
	Naive Lock = "naive"
)

// ParseLock reads a --lock value.
func ParseLock(s string) (Lock, error) {
	for _, l := range []Lock{LockLib, Naive} {
		if strings.EqualFold(s, string(l)) {
			return l, nil
		}
	}
	return "", fmt.Errorf("%w: unknown lock %q (want locklib or naive)", ErrBadConfig, s)
}

// Config describes one demo run.
type Config struct {
	Servers   Servers       // where the locks live (StartEmbedded, or the user's servers)
	Lock      Lock          // default LockLib
	Scenario  Scenario      // default Mixed
	Workers   int           // contending workers at start; default 8
	Resources int           // protected resources, one lock key each; default 3 (rw-pool: DocKey and PoolKey)
	Permits   int           // rw-pool: the pool's semaphore's permits; default 3
	TTL       time.Duration // lock TTL; default 2s. Work and fault timings scale with it
	Duration  time.Duration // run length; 0 runs until Stop (interactive)
	// PhaseLength is how long each phase of a mixed run lasts; default Duration split evenly
	// between the phases, or 8 TTLs when the run has no Duration.
	PhaseLength time.Duration
	Seed        uint64 // random seed; 0 picks one
}

// Defaults and bounds of a Config.
const (
	DefaultWorkers   = 8
	DefaultResources = 3
	DefaultTTL       = 2 * time.Second
	MaxWorkers       = 64
	MaxResources     = 32
	minTTL           = 200 * time.Millisecond
)

// failoverMinInstances: with fewer, one instance down leaves no quorum at all.
const failoverMinInstances = 3

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Scenario == "" {
		c.Scenario = Mixed
	}
	if c.Lock == "" {
		c.Lock = LockLib
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Resources == 0 {
		c.Resources = DefaultResources
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Permits == 0 {
		c.Permits = DefaultPermits
	}
	switch {
	case len(c.Servers.Addrs) == 0 || c.Servers.Dial == nil:
		return c, fmt.Errorf("%w: no target", ErrBadConfig)
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return c, fmt.Errorf("%w: --workers %d (want 1..%d)", ErrBadConfig, c.Workers, MaxWorkers)
	case c.Resources < 1 || c.Resources > MaxResources:
		return c, fmt.Errorf("%w: --resources %d (want 1..%d)", ErrBadConfig, c.Resources, MaxResources)
	case c.Permits < 1 || c.Permits > MaxWorkers:
		return c, fmt.Errorf("%w: --permits %d (want 1..%d)", ErrBadConfig, c.Permits, MaxWorkers)
	case c.TTL < minTTL:
		return c, fmt.Errorf("%w: --ttl %v is too short (at least %v)", ErrBadConfig, c.TTL, minTTL)
	case c.Duration < 0:
		return c, fmt.Errorf("%w: --duration %v", ErrBadConfig, c.Duration)
	}
	if _, err := ParseScenario(string(c.Scenario)); err != nil {
		return c, err
	}
	if _, err := ParseLock(string(c.Lock)); err != nil {
		return c, err
	}
	if c.Lock == Naive && c.Servers.Redlock {
		return c, fmt.Errorf("%w: the naive lock is single-instance: it cannot run on a Redlock target", ErrBadConfig)
	}
	if c.Scenario == Failover && !c.failoverPossible() {
		return c, fmt.Errorf("%w: the failover scenario needs a Redlock target of at least %d instances "+
			"(--redlock 3: three embedded servers, or three --redis URLs): with one server, or fewer instances, losing one leaves no quorum",
			ErrBadConfig, failoverMinInstances)
	}
	if c.Scenario == RWPool && (c.Lock != LockLib || c.Servers.Redlock) {
		return c, fmt.Errorf("%w: the rw-pool scenario takes locklib's read-write lock and lease semaphore on one deployment "+
			"(one server, --cluster or a sentinel): not with --lock naive (it has neither) nor --redlock (locklib has them on one deployment only)", ErrBadConfig)
	}
	if (c.Scenario == FailoverReplica) != (c.Servers.Replication != nil) {
		return c, fmt.Errorf("%w: the failover-replica scenario runs on, and only on, the demo's own master, replica and sentinel "+
			"(StartReplicaSet; lockscope demo --scenario failover-replica without --redis or --redlock)", ErrBadConfig)
	}
	if c.PhaseLength == 0 {
		n := len(phasesFor(c.Scenario, c.failoverPossible()))
		if c.Duration > 0 {
			c.PhaseLength = c.Duration / time.Duration(n)
		} else {
			c.PhaseLength = 8 * c.TTL
		}
	}
	return c, nil
}

func (c Config) failoverPossible() bool {
	return c.Servers.Redlock && len(c.Servers.Addrs) >= failoverMinInstances
}
