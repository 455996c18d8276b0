package scanner

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
)

// TestClusterCensusThroughPromotions: on a cluster with one replica per master the census
// reads the masters only, and keeps working while replicas are promoted (CLUSTER FAILOVER
// FORCE, then a master killed): censuses run back to back the whole time, none counts a lock
// twice, a complete one (no server missing) misses none, and once each promotion settles a
// complete census names the promoted master as the holder of its keys.
func TestClusterCensusThroughPromotions(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1))
	ctx := testCtx(t)
	var urls []string
	for _, a := range cl.Addrs {
		urls = append(urls, "redis://"+a)
	}
	target, _, err := connect.Open(ctx, connect.Config{URLs: urls, Mode: connect.Cluster})
	must(t, err)
	defer func() {
		target.Close()
		// go-redis retries a dead node's dial from a goroutine that sees the pool closed
		// after its one-second pause: goleak would count it.
		time.Sleep(1100 * time.Millisecond)
	}()
	keys := loadLocks(t, target.Clients[0], "p", 3000)
	must(t, cl.WaitReplicasSynced(10*time.Second))
	s := New(target, Options{Retries: 2})

	// check takes one census: no key twice; when complete, every key, each on a master.
	check := func(when string) (complete bool, holders map[string]string) {
		c, err := s.Census(ctx)
		seen := map[string]string{}
		for _, l := range c.Locks {
			if _, dup := seen[l.Key]; dup {
				t.Errorf("%s: %s counted twice", when, l.Key)
			}
			seen[l.Key] = l.Addr
		}
		if err != nil || len(c.Missing) > 0 {
			return false, nil
		}
		for _, k := range keys {
			if _, ok := seen[k]; !ok {
				t.Errorf("%s: a complete census (%d locks) misses %s", when, len(c.Locks), k)
				return true, seen
			}
		}
		return true, seen
	}
	masters := func() map[string]bool {
		t.Helper()
		nodes, err := cl.Topology()
		must(t, err)
		out := map[string]bool{}
		for _, n := range nodes {
			if n.Master {
				out[n.Addr] = true
			}
		}
		return out
	}
	settled := func(when string, want map[string]bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			complete, holders := check(when)
			ok := complete
			for _, addr := range holders {
				ok = ok && want[addr]
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no complete census reading only the masters %v within 30s", when, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	before := masters()
	if len(before) != 3 {
		t.Fatalf("%d masters at start, want 3", len(before))
	}
	settled("at start", before)

	// Censuses back to back while the promotions happen.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var passes, partial int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if complete, _ := check("during the promotions"); !complete {
				partial++
			}
			passes++
		}
	})

	_, replicas, err := cl.MasterOf(keys[0])
	must(t, err)
	if len(replicas) != 1 {
		t.Fatalf("%s's master has %d replicas, want 1", keys[0], len(replicas))
	}
	must(t, cl.FailoverForce(replicas[0], 30*time.Second))
	settled("after CLUSTER FAILOVER FORCE", masters())

	var other string // a key of a master that still has its replica
	for i := 0; other == "" && i < len(keys); i++ {
		if _, rs, err := cl.MasterOf(keys[i]); err == nil && len(rs) == 1 {
			other = keys[i]
		}
	}
	if other == "" {
		t.Fatal("no key on a master with a replica")
	}
	old, promoted, err := cl.KillMaster(other, 30*time.Second)
	must(t, err)
	now := masters()
	delete(now, old.Addr) // the killed node is still listed, flagged fail
	settled(fmt.Sprintf("after %s was killed", old.Addr), now)
	if !now[promoted.Addr] {
		t.Fatalf("the promoted %s is not a master", promoted.Addr)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d censuses during the promotions, %d of them partial (a master down or moving)", passes, partial)
	if passes < 2 {
		t.Fatalf("%d censuses ran during the promotions", passes)
	}
}
