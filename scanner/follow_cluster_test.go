package scanner

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// reshard moves slots from one cluster node to another with redis-cli.
func reshard(t *testing.T, cl *redistest.Cluster, from, to, slots int) {
	t.Helper()
	id := func(i int) string { return cl.Nodes[i].Client().ClusterMyID(testCtx(t)).Val() }
	out, err := exec.Command("redis-cli", "--cluster", "reshard", cl.Addrs[0], "--cluster-from", id(from), "--cluster-to", id(to),
		"--cluster-slots", strconv.Itoa(slots), "--cluster-yes").CombinedOutput()
	if err != nil {
		t.Fatalf("reshard: %v\n%s", err, out)
	}
	if err := cl.WaitOK(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestFollowClusterFailover: a replica promoted after the watch began (CLUSTER FAILOVER TAKEOVER) is
// followed too: a lock created in its slots is heard of long before the next pass (an hour
// away).
func TestFollowClusterFailover(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 4)
	ctx := testCtx(t)
	// Node 3 gives its slots to node 0 and, a master without slots, becomes its replica.
	reshard(t, cl, 3, 0, 16384/4)
	node3 := cl.Nodes[3].Client()
	redistest.Eventually(t, "node 3 a replica", func() bool {
		return node3.Do(ctx, "ROLE").Val().([]any)[0] == "slave"
	})
	cc := cl.Client()
	updates := New(clusterTarget(cl, cc), Options{Interval: time.Hour}).Watch(ctx)
	f := waitFor(t, updates, 10*time.Second, "following status", func(u Update) bool { return u.Kind == UpdateFollowing })
	if len(f.Following.Servers) != 3 {
		t.Fatalf("following %+v, want the 3 masters", f.Following)
	}
	waitFor(t, updates, 20*time.Second, "pass 1", passDone(1))
	// TAKEOVER: promoted without the old master's agreement (an operator's forced failover).
	must(t, node3.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err())
	redistest.Eventually(t, "node 3 a master", func() bool {
		return node3.Do(ctx, "ROLE").Val().([]any)[0] == "master"
	})
	if err := cl.WaitOK(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, updates, 10*time.Second, "the promoted master followed", func(u Update) bool {
		return u.Kind == UpdateFollowing && slices.ContainsFunc(u.Following.Servers, func(sf ServerFollow) bool {
			return sf.Addr == cl.Addrs[3] && sf.Mechanism == FollowTracking
		})
	})
	for i := range 1000 {
		key := fmt.Sprintf("lock:fo:%d", i)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := cc.Set(ctx, key, "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err()
			if err == nil {
				break
			}
			if time.Now().After(deadline) { // the old master's resync can keep it CLUSTERDOWN here
				t.Skipf("the promoted master is followed; the cluster did not take writes again: %v", err)
			}
		}
		if node3.Exists(ctx, key).Val() == 1 {
			waitFor(t, updates, 5*time.Second, key+" on the promoted master", func(u Update) bool { _, ok := lockIn(u, key); return ok })
			return
		}
	}
	t.Fatal("no key landed on the promoted master")
}
