package redistest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestClusterStartKillRestart(t *testing.T) {
	Slow(t)
	c := StartCluster(t, 3, WithArgs("--cluster-require-full-coverage", "no"))
	cc := c.Client()
	ctx := context.Background()
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls in parallel
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := node.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			t.Errorf("master %s holds no key: slots not spread", node.Options().Addr)
		}
		masters.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := masters.Load(); n != 3 {
		t.Fatalf("%d masters, want 3", n)
	}

	c.Nodes[1].Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.State(0)
		if err == nil && st == "ok" {
			// require-full-coverage no: the others keep serving; the dead node is flagged.
			if flagged, _ := clusterNodesMentions(c.Nodes[0].Addr, c.Nodes[1].Addr, "fail"); flagged {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0 never flagged the killed node 1 as failed (state %q, err %v)", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	c.Nodes[1].Restart()
	if err := c.WaitOK(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The restarted node is empty but owns its slots again: writes there succeed.
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprintf("k%d", i), "v2", 0).Err(); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	}
}

// clusterNodesMentions reports whether node at addr lists target with flag (CLUSTER NODES).
func clusterNodesMentions(addr, target, flag string) (bool, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	nodes, err := cl.ClusterNodes(context.Background()).Result()
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.HasPrefix(f[1], target+"@") {
			for _, fl := range strings.Split(f[2], ",") {
				if fl == flag {
					return true, nil
				}
			}
		}
	}
	return false, nil
}
