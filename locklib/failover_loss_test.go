package locklib

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// lossMode is one way of taking the locks of TestFailoverLossRate.
type lossMode struct {
	name     string
	replicas int // WithReplicas(replicas, lossWait); 0: plain
}

// lossWait is WithReplicas' timeout in TestFailoverLossRate: localhost replicas that are up
// answer WAIT within a millisecond or two, and a loaded machine must not make them miss it.
const lossWait = 300 * time.Millisecond

// lossPhase bounds the acquisitions of a round, while the replicas are stalled.
const lossPhase = 3 * time.Second

// lossTally counts one mode's locks over the failovers of TestFailoverLossRate.
type lossTally struct {
	attempts, held, refused, lost, overlaps, staleAccepted, regressions int
}

func (n *lossTally) add(o lossTally) {
	n.attempts, n.held, n.refused, n.lost = n.attempts+o.attempts, n.held+o.held, n.refused+o.refused, n.lost+o.lost
	n.overlaps, n.staleAccepted, n.regressions = n.overlaps+o.overlaps, n.staleAccepted+o.staleAccepted, n.regressions+o.regressions
}

// fencedResource accepts a write whose token is not below the highest it has accepted, per
// key: what a storage that checks fencing tokens does.
type fencedResource struct {
	mu      sync.Mutex
	highest map[string]int64
}

func (r *fencedResource) write(key string, token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest[key] {
		return false
	}
	r.highest[key] = token
	return true
}

// lossScenarios are the failovers of TestFailoverLossRate.
var lossScenarios = []string{"kill, replicas behind", "kill, the replica in sync too", "SENTINEL FAILOVER, replicas behind"}

// TestFailoverLossRate measures what failovers do to locks held across them. In every round,
// two clients per mode (a plain lock, WithReplicas(1), WithReplicas(2)) contend for four keys
// of the mode while replication is stalled, hold what they got and write to a fenced resource
// with their token; then the master fails over one of three ways:
//
//   - kill, replicas behind: both replicas stalled, the master killed;
//   - kill, the replica in sync too: one replica stalled, the master and the other replica
//     killed, so the stalled one is promoted;
//   - SENTINEL FAILOVER, replicas behind: both stalled, thawed, and a failover asked for at once.
//
// A held lock is lost when its key no longer holds its value on the new master; the other
// client of the mode then takes it (an overlap: the first still holds it as far as it knows)
// and writes, and the first writes again with its old token, which the resource must refuse:
// stale writes accepted must be 0, and no token may go back. The figures are logged per mode;
// LOCKLIB_FAILOVER=<rounds> runs that many rounds of the three (make soak), the default one.
func TestFailoverLossRate(t *testing.T) {
	redistest.Slow(t)
	rounds := 1
	if s := os.Getenv("LOCKLIB_FAILOVER"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOCKLIB_FAILOVER=%q: want a positive number of rounds", s)
		}
		rounds = n
	}
	modes := []lossMode{{"plain", 0}, {"WithReplicas(1)", 1}, {"WithReplicas(2)", 2}}
	r := redistest.StartReplicated(t, 2, 3)
	ctx := testCtx(t, time.Duration(rounds)*3*time.Minute)
	clients := make([][2]*Client, len(modes))
	for i, m := range modes {
		for j := range clients[i] {
			opts := []Option{WithNode(fmt.Sprintf("%s-%d", m.name, j)), WithEvents(false)}
			if m.replicas > 0 {
				opts = append(opts, WithReplicas(m.replicas, lossWait))
			}
			clients[i][j] = New(r.Client(), opts...)
			defer clients[i][j].Close()
		}
	}
	tallies := map[string][]lossTally{}
	for _, m := range modes {
		tallies[m.name] = make([]lossTally, len(lossScenarios))
	}
	res := &fencedResource{highest: map[string]int64{}}
	began := time.Now()
	for round := range rounds {
		for si, scenario := range lossScenarios {
			lossRound(t, ctx, r, round, scenario, modes, clients, res, func(mode string) *lossTally { return &tallies[mode][si] })
		}
	}
	total := make([]lossTally, len(modes))
	var b strings.Builder
	fmt.Fprintf(&b, "%d round(s) of %d failovers in %v (LOCKLIB_FAILOVER=%d)\n", rounds, len(lossScenarios), time.Since(began).Round(time.Second), rounds)
	fmt.Fprintf(&b, "%-36s %-16s %8s %5s %8s %5s %8s %6s\n", "failover", "mode", "attempts", "held", "refused", "lost", "overlaps", "stale")
	for si, scenario := range lossScenarios {
		for mi, m := range modes {
			n := tallies[m.name][si]
			fmt.Fprintf(&b, "%-36s %-16s %8d %5d %8d %5d %8d %6d\n", scenario, m.name, n.attempts, n.held, n.refused, n.lost, n.overlaps, n.staleAccepted)
			total[mi].add(n)
		}
	}
	for mi, m := range modes {
		n := total[mi]
		rate := "-"
		if n.held > 0 {
			rate = fmt.Sprintf("%.0f%%", 100*float64(n.lost)/float64(n.held))
		}
		fmt.Fprintf(&b, "%-36s %-16s %8d %5d %8d %5d %8d %6d  lost/held %s\n", "all", m.name, n.attempts, n.held, n.refused, n.lost, n.overlaps, n.staleAccepted, rate)
		if n.staleAccepted != 0 || n.regressions != 0 {
			t.Errorf("%s: %d stale writes accepted, %d tokens that went back: fencing must catch every overlap", m.name, n.staleAccepted, n.regressions)
		}
	}
	t.Log("\n" + b.String())
	plain, one, two := total[0], total[1], total[2]
	if one.held == 0 {
		// On a loaded machine the replica in sync can miss the short WAIT too: nothing held,
		// nothing to lose, which proves nothing either way.
		t.Log("no WithReplicas(1) lock was held at a failover: its loss is not measured in this run")
	}
	switch {
	case plain.lost == 0:
		t.Error("no plain lock was lost: the failovers did not lose what the replicas had not copied")
	case one.held > 0 && one.lost == 0:
		t.Error("no WithReplicas(1) lock was lost, though a replica that had not confirmed it was promoted")
	case two.lost != 0:
		t.Errorf("%d WithReplicas(2) locks lost: every replica had confirmed them", two.lost)
	case two.refused == 0 || one.refused == 0:
		t.Error("no acquisition was refused for want of replicas, though they were stalled")
	}
}

// lossHolding is a lock held at a failover of TestFailoverLossRate.
type lossHolding struct {
	mode, key string
	other     *Client // the mode's other client
	l         *Lock
}

// lossRound is one failover of TestFailoverLossRate.
func lossRound(t *testing.T, ctx context.Context, r *redistest.Replicated, round int, scenario string,
	modes []lossMode, clients [][2]*Client, res *fencedResource, tally func(mode string) *lossTally,
) {
	t.Helper()
	if err := r.WaitSynced(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	old, err := r.Master()
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := r.Replicas()
	if err != nil || len(replicas) != 2 {
		t.Fatalf("replicas %v, %v", replicas, err)
	}
	var stalled, killed []*redistest.Server
	switch scenario {
	case "kill, the replica in sync too":
		stalled, killed = replicas[:1], []*redistest.Server{old, replicas[1]}
	case "kill, replicas behind":
		stalled, killed = replicas, []*redistest.Server{old}
	default:
		stalled = replicas
	}
	resume, err := r.StallReplication(stalled...)
	if err != nil {
		t.Fatal(err)
	}

	// Contention: both clients of a mode try each of its keys at the same time, all keys at
	// once, so that the stall lasts one WAIT timeout, not one per key (a replica frozen longer
	// than Sentinel's down-after-milliseconds is not promoted).
	// The phase is bounded too: Sentinel promotes no replica whose link to the master has been
	// down more than ten times down-after-milliseconds (10 s here) longer than the master, and
	// on a loaded machine (make test runs packages side by side) an unbounded phase once
	// froze the replicas that long, so no failover came.
	phase, endPhase := context.WithTimeout(ctx, lossPhase)
	defer endPhase()
	var mu sync.Mutex
	var held []lossHolding
	var wg sync.WaitGroup
	for mi, m := range modes {
		for j, c := range clients[mi] {
			for k := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("lock:loss:%s:%d:%d", m.name, round, k)
					l, err := c.TryObtain(phase, key, 30*time.Second)
					mu.Lock()
					defer mu.Unlock()
					n := tally(m.name)
					if phase.Err() != nil && err != nil {
						return // cut by the phase's bound: not an attempt that could tell anything
					}
					n.attempts++
					switch {
					case err == nil:
						n.held++
						if !res.write(key, l.Token()) {
							n.regressions++
						}
						held = append(held, lossHolding{m.name, key, clients[mi][1-j], l})
					case errors.Is(err, ErrNotReplicated):
						n.refused++
					case !errors.Is(err, ErrNotObtained):
						t.Errorf("%s %s: %v", m.name, key, err)
					}
				}()
			}
		}
	}
	wg.Wait()

	var promoted *redistest.Server
	if killed != nil {
		for _, s := range killed {
			s.Kill()
		}
		resume()
		promoted, err = r.WaitPromoted(old, 30*time.Second)
	} else {
		resume()
		promoted, err = r.Failover(30 * time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	direct := promoted.Client()
	var lost []lossHolding
	for _, h := range held {
		if v, _ := direct.Get(ctx, h.key).Result(); v != h.l.Value() {
			tally(h.mode).lost++
			lost = append(lost, h)
		}
	}
	// The killed nodes come back as replicas of the new master, so that WithReplicas' clients
	// can take locks again.
	for _, s := range killed {
		if err := r.Rejoin(s, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.WaitSynced(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, h := range lost {
		n := tally(h.mode)
		// The other client takes the lost lock through its failover client, once that has
		// found the new master, and writes; the first holder, none the wiser, writes again.
		var taken *Lock
		redistest.Eventually(t, "the other client takes "+h.key+" on the new master", func() bool {
			l, err := h.other.TryObtain(ctx, h.key, 30*time.Second)
			taken = l
			return err == nil
		})
		if h.l.Err() == nil {
			n.overlaps++
		}
		if !res.write(h.key, taken.Token()) {
			n.regressions++ // the new holder's token is below the one it replaced
		}
		if res.write(h.key, h.l.Token()) {
			n.staleAccepted++
		}
		_ = taken.Release(ctx)
	}
	for _, h := range held {
		_ = h.l.Release(ctx)
	}
}
