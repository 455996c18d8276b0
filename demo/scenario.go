package demo

import (
	"fmt"
	"strings"
)

// Scenario is a kind of run: which faults the demo provokes while the workers contend.
type Scenario string

// The scenarios of `lockscope demo --scenario`.
const (
	Healthy  Scenario = "healthy"  // plain contention
	Slow     Scenario = "slow"     // work longer than the TTL, kept alive by the watchdog
	Crash    Scenario = "crash"    // a holder dies: never renews, never releases; its lock expires
	Pause    Scenario = "pause"    // a holder freezes past its TTL, then writes late: the resource refuses it
	Failover Scenario = "failover" // Redlock: one instance stops and comes back empty
	Mixed    Scenario = "mixed"    // the others in turn, one phase each
	// FailoverReplica: the demo's own master, replica and sentinel; the master dies with its
	// replica behind, and the locks it handed out meanwhile are lost in the promotion.
	FailoverReplica Scenario = "failover-replica"
	// RWPool: a read-mostly document behind a read-write lock and a pool behind a lease
	// semaphore of Config.Permits, with crashes and pauses (rwpool.go); never in mixed: its
	// workers take leases, not locks.
	RWPool Scenario = "rw-pool"
)

// Scenarios lists every scenario name, in the order of --help.
var Scenarios = []Scenario{Healthy, Slow, Crash, Pause, Failover, Mixed, FailoverReplica, RWPool}

// ParseScenario reads a --scenario value.
func ParseScenario(s string) (Scenario, error) {
	for _, sc := range Scenarios {
		if strings.EqualFold(s, string(sc)) {
			return sc, nil
		}
	}
	names := make([]string, len(Scenarios))
	for i, sc := range Scenarios {
		names[i] = string(sc)
	}
	return "", fmt.Errorf("%w: unknown scenario %q (want one of %s)", ErrBadConfig, s, strings.Join(names, ", "))
}

// phasesFor is the cycle of phases a run of sc goes through. Mixed runs every scenario the
// target supports; failover needs a Redlock target that survives one instance down.
func phasesFor(sc Scenario, failoverPossible bool) []Scenario {
	if sc != Mixed {
		return []Scenario{sc}
	}
	phases := []Scenario{Healthy, Slow, Crash, Pause}
	if failoverPossible {
		phases = append(phases, Failover)
	}
	return phases
}
