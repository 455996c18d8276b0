package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A replicated set fails over when its master is killed and when a sentinel is asked to; the
// failover client follows; a rejoined node is a replica in sync again; a write the replicas
// never copied is lost by the promotion.
func TestReplicatedFailover(t *testing.T) {
	Slow(t)
	r := StartReplicated(t, 2, 3)
	ctx := context.Background()
	c := r.Client()
	if err := c.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitSynced(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A write the replicas never see: the master dies before they could copy it.
	resume, err := r.StallReplication()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "lost", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, _ := r.Master()
	m.Kill()
	resume()
	promoted, err := r.WaitPromoted(m, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == m {
		t.Fatal("the killed master is still named master")
	}
	Eventually(t, "the failover client writes to the new master", func() bool {
		return c.Set(ctx, "after", "1", 0).Err() == nil
	})
	if v, _ := c.Get(ctx, "k").Result(); v != "1" {
		t.Fatalf("a synced write is gone after the failover: %q", v)
	}
	if n, _ := c.Exists(ctx, "lost").Result(); n != 0 {
		t.Fatal("a write no replica had copied survived the promotion")
	}
	if err := r.Rejoin(m, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if role, err := roleOf(m.Addr); err != nil || role != "slave" {
		t.Fatalf("rejoined node: role %q, %v", role, err)
	}

	before, _ := r.Master()
	promoted, err = r.Failover(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == before {
		t.Fatal("SENTINEL FAILOVER left the master in place")
	}
	Eventually(t, "the failover client follows SENTINEL FAILOVER", func() bool {
		return c.Set(ctx, "after2", "1", 0).Err() == nil
	})
}

// A cluster with one replica per master promotes the replica of a killed master, and of a
// master whose replica is told CLUSTER FAILOVER FORCE; a write its replica never got is lost
// with the master.
func TestClusterReplicasFailover(t *testing.T) {
	Slow(t)
	cl := StartCluster(t, 3, ClusterReplicas(1))
	if len(cl.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(cl.Nodes))
	}
	ctx := context.Background()
	// go-redis reloads its slot map only every ClusterStateReloadInterval (60 s by default), not
	// when a master stops answering: until then every command for its slots fails.
	c := cl.Client(func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = 500 * time.Millisecond })
	if err := c.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitReplicasSynced(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	old, promoted, err := cl.KillMaster("k", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := cl.MasterOf("k"); err != nil || m != promoted || m == old {
		t.Fatalf("after the kill k is served by %v (%v); promoted %s", m, err, promoted.Addr)
	}
	Eventually(t, "the cluster client reads k from the promoted replica", func() bool {
		v, err := c.Get(ctx, "k").Result()
		return err == nil && v == "1"
	})

	// A key of another master, one that still has its replica.
	var other string
	var replicas []*Server
	for i := 0; other == "" && i < 1000; i++ {
		key := fmt.Sprintf("other%d", i)
		if _, rs, err := cl.MasterOf(key); err == nil && len(rs) == 1 {
			other, replicas = key, rs
		}
	}
	if other == "" {
		t.Fatal("no key on a master with a replica")
	}
	// A write its replica never got (replication stalled, then the master killed) is lost
	// when the replica is forced over; the key is in the same slot (the hash tag).
	lost := "{" + other + "}:lost"
	master, stalled, resume, err := cl.StallReplication(other)
	if err != nil {
		t.Fatal(err)
	}
	if len(stalled) != 1 || stalled[0] != replicas[0] {
		t.Fatalf("StallReplication stalled %v, want %s", stalled, replicas[0].Addr)
	}
	if err := c.Set(ctx, lost, "1", 0).Err(); err != nil {
		resume()
		t.Fatal(err)
	}
	master.Kill()
	resume()
	if err := cl.FailoverForce(replicas[0], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if now, _, err := cl.MasterOf(other); err != nil || now != replicas[0] {
		t.Fatalf("after FAILOVER FORCE %s is served by %v (%v)", other, now, err)
	}
	Eventually(t, "the cluster client asks the promoted replica for the stalled write", func() bool {
		_, err := c.Get(ctx, lost).Result()
		return err == redis.Nil
	})
}
