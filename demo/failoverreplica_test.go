package demo

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// replicaSoak is how long the long form of TestFailoverReplica runs (make soak:
// DEMO_FAILOVER_REPLICA=2m, about ten failovers); the short form stops after the first.
func replicaSoak(t *testing.T) time.Duration {
	v := os.Getenv("DEMO_FAILOVER_REPLICA")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("DEMO_FAILOVER_REPLICA=%q: %v", v, err)
	}
	return d
}

func startReplicaSet(t *testing.T) *ReplicaSet {
	t.Helper()
	if _, err := redistest.Binary(); err != nil {
		t.Fatal(err)
	}
	rs, err := StartReplicaSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	return rs
}

// The master dies with its replica behind: locks and tokens it handed out are lost in the
// promotion, holders overlap, and the fenced resource refuses every write of a holder whose
// lock went to another worker (no overlap accepted). Tokens stay increasing across the
// promotion: the first token after it is above the last before, though the new master's
// counter may be behind.
func TestFailoverReplica(t *testing.T) {
	t.Parallel()
	rs := startReplicaSet(t)
	soak := replicaSoak(t)
	start := time.Now()
	c, err := Start(Config{Servers: rs.Servers(), Scenario: FailoverReplica, TTL: 2 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	// The short form: until the first promotion, and until every resource has been taken
	// after it (or 3 s more); the long form: for its whole duration.
	promotedBy := time.Now().Add(40 * time.Second)
	for {
		snap := c.Snapshot()
		if snap.Counters.Promotions > 0 && soak == 0 {
			break
		}
		if soak > 0 && time.Since(start) > soak {
			break
		}
		if soak == 0 && time.Now().After(promotedBy) {
			t.Fatalf("no promotion within 40 s: %+v; events %v", snap.Counters, snap.Events)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if log := c.checker.promotionLog(); len(log) == 0 || allTaken(log[len(log)-1]) {
			break
		}
	}
	// The console's view of it: the master the workers follow, and the event that says so
	// (short form: no later failover can have begun).
	snap := c.Snapshot()
	if log := c.checker.promotionLog(); len(log) > 0 && soak == 0 {
		last := log[len(log)-1]
		if snap.Master != last.To || snap.PreviousMaster != last.From {
			t.Errorf("snapshot: master %q (was %q), want %q (was %q)", snap.Master, snap.PreviousMaster, last.To, last.From)
		}
		want := "failover: the workers now follow master " + last.To
		if !slices.ContainsFunc(snap.Events, func(e Event) bool { return strings.HasPrefix(e.Text, want) }) {
			t.Errorf("no event %q in %v", want, snap.Events)
		}
	}
	s := c.Stop()
	t.Logf("%s run: %+v", time.Since(start).Round(time.Millisecond), s.Counters)
	if s.StaleAccepted != 0 || s.Unsafe() {
		t.Errorf("%d stale writes accepted; verdict: %v", s.StaleAccepted, s.Verdict())
	}
	if s.Promotions == 0 || len(s.PromotionLog) == 0 {
		t.Fatalf("no promotion recorded: %+v", s.Counters)
	}
	if s.TokenRegressions != 0 {
		t.Errorf("%d first tokens after a promotion were not above the last before", s.TokenRegressions)
	}
	taken := 0
	for _, p := range s.PromotionLog {
		if p.From == p.To || p.To == "" {
			t.Errorf("promotion %+v: no new master", p)
		}
		for _, r := range p.Resources {
			t.Logf("%s → %s %s: token before %d, new master's counter %d, first after %d",
				p.From, p.To, r.Key, r.TokenBefore, r.NewMasterCounter, r.FirstTokenAfter)
			if r.FirstTokenAfter == 0 {
				continue
			}
			taken++
			if r.FirstTokenAfter <= r.TokenBefore || r.FirstTokenAfter <= r.NewMasterCounter {
				t.Errorf("%s: first token after the promotion %d, not above %d (before) and %d (new master)",
					r.Key, r.FirstTokenAfter, r.TokenBefore, r.NewMasterCounter)
			}
		}
	}
	if taken == 0 {
		t.Error("no lock was taken after any promotion")
	}
	// The short form often sees no holder overlap (a lost holder may learn of the loss first),
	// so "0 stale writes accepted" proves nothing there; the long form must see the fence at
	// work, or it would pass with the resource's token check gone.
	if soak > 0 && (s.OverlappingHolders == 0 || s.StaleRejected == 0) {
		t.Errorf("%v of failovers: %d overlapping holders, %d stale writes refused: the fence never had to refuse a write",
			soak, s.OverlappingHolders, s.StaleRejected)
	}
}

// allTaken: every resource got its first token after promotion p.
func allTaken(p Promotion) bool {
	for _, r := range p.Resources {
		if r.FirstTokenAfter == 0 {
			return false
		}
	}
	return true
}

// Close kills every process the set started and removes its directory; nothing outlives it.
func TestReplicaSetClose(t *testing.T) {
	rs := startReplicaSet(t)
	var pids []int
	for _, p := range append(rs.nodes[:], rs.sentinel) {
		pids = append(pids, p.proc.Pid())
	}
	rs.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Close (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(rs.dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Close: %v", rs.dir, err)
	}
}

// The scenario runs on the demo's own set only, and the set only for it.
func TestFailoverReplicaNeedsItsSet(t *testing.T) {
	if _, err := Start(Config{Servers: embedded(t, 1).Servers(false), Scenario: FailoverReplica}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("failover-replica on an embedded server: %v, want ErrBadConfig", err)
	}
}

// A holder that writes after its lock went to another worker is an overlapping holder,
// counted once, whether fencing refuses its writes or not.
func TestCheckerOverlappingHolders(t *testing.T) {
	c := newChecker(FencingTokens)
	a := c.open("r", 1, 100, "a", FailoverReplica, 0)
	if !c.claim(a) {
		t.Fatal("first claim refused")
	}
	b := c.open("r", 2, 200, "b", FailoverReplica, 0)
	if !c.write(a) { // b has not written: nothing the resource could refuse a's write for
		t.Error("a's write before b's first was refused")
	}
	if !c.claim(b) {
		t.Error("the newer holder's claim was refused")
	}
	for range 2 { // refused each time, counted as one overlapping holder
		if c.write(a) {
			t.Error("a write of the older holder was accepted after the newer one wrote")
		}
	}
	k, _ := c.totals()
	if k.OverlappingHolders != 1 || k.StaleRejected != 2 || k.Unsafe() {
		t.Errorf("overlapping holders %d, stale rejected %d, unsafe %v: want 1, 2, false", k.OverlappingHolders, k.StaleRejected, k.Unsafe())
	}
}

// The first token after a promotion is a jump when the new master's counter was behind, and
// a regression (unsafe) when it is not above the last token before.
func TestCheckerFirstTokenAfterPromotion(t *testing.T) {
	c := newChecker(FencingTokens)
	c.open("r", 1, 100, "a", FailoverReplica, 0)
	c.promoted(&Promotion{Resources: []PromotedResource{{Key: "r", TokenBefore: 100, NewMasterCounter: 50}}}, FailoverReplica)
	c.open("r", 2, 200, "b", FailoverReplica, 0)
	c.open("r", 3, 300, "c", FailoverReplica, 0) // not the first after: not judged
	k, _ := c.totals()
	if k.Promotions != 1 || k.TokenJumps != 1 || k.TokenRegressions != 0 || k.Unsafe() {
		t.Errorf("after a jump: %+v", k)
	}
	c.promoted(&Promotion{Resources: []PromotedResource{{Key: "r", TokenBefore: 300, NewMasterCounter: 300}}}, FailoverReplica)
	c.open("r", 1, 250, "d", FailoverReplica, 0)
	k, _ = c.totals()
	if k.TokenJumps != 1 || k.TokenRegressions != 1 || !k.Unsafe() {
		t.Errorf("after a regression: %+v", k)
	}
	log := c.promotionLog()
	if len(log) != 2 || log[0].Resources[0].FirstTokenAfter != 200 || log[1].Resources[0].FirstTokenAfter != 250 {
		t.Errorf("promotion log %+v", log)
	}
}

// A port taken by someone else's server between the probe and the bind: the set's server
// fails to start, and the other server is not taken for it.
func TestReplicaSetNeverAdoptsAnotherServer(t *testing.T) {
	bin, err := redistest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	other := redistest.Start(t)
	r := &ReplicaSet{bin: bin, dir: t.TempDir()}
	p := &redisProcess{addr: other.Addr}
	if err := r.launch(context.Background(), p, "node0"); err == nil {
		p.kill()
		t.Fatalf("launch on %s, a port another server holds, succeeded", other.Addr)
	}
	if err := other.Client().Ping(context.Background()).Err(); err != nil {
		t.Errorf("the other server: %v", err)
	}
}

// A failover that failed after its kill (the sentinel too slow to promote) leaves the set
// with one data node: the next failover must not kill that last master (StallReplication
// refuses without a running replica), and Heal brings the dead node back as a replica first.
func TestReplicaSetWithoutReplica(t *testing.T) {
	t.Parallel()
	rs := startReplicaSet(t)
	ctx := context.Background()
	master, err := rs.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rs.node(master)
	if err != nil {
		t.Fatal(err)
	}
	replica := rs.other(m)
	replica.kill()
	if _, err := rs.StallReplication(ctx); err == nil {
		t.Fatal("replication stalled on a set whose replica is down: the failover's next step kills its last master")
	}
	healed, err := rs.Heal(ctx)
	if err != nil || healed != replica.addr || !replica.proc.Running() {
		t.Fatalf("Heal: %q, %v (running %v), want %s back", healed, err, replica.proc.Running(), replica.addr)
	}
	if healed, err := rs.Heal(ctx); err != nil || healed != "" {
		t.Errorf("Heal of a whole set: %q, %v", healed, err)
	}
	if now, err := rs.Master(ctx); err != nil || now != master {
		t.Errorf("master %q, %v after Heal, want %s untouched", now, err, master)
	}
}
