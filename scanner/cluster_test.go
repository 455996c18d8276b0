package scanner

import (
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

func clusterTarget(c *redistest.Cluster, cc *redis.ClusterClient) connect.Target {
	return connect.Target{Mode: connect.Cluster, Clients: []redis.UniversalClient{cc}, Addrs: c.Addrs}
}

// TestClusterCensus: a real 3-master cluster. Every master is scanned, every key appears once
// with the master that holds it, companions in the same slot are read; then one master is
// killed: the census names it in Missing and still has the other masters' locks.
func TestClusterCensus(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3, redistest.WithArgs("--cluster-require-full-coverage", "no"))
	cc := cl.Client(func(o *redis.ClusterOptions) { o.MaxRetries = 1 })
	ctx := testCtx(t)
	keys := loadLocks(t, cc, "c", 3000)
	must(t, cc.Set(ctx, protocol.FenceKey(keys[7]), "1234", 0).Err())
	must(t, cc.RPush(ctx, "lock:c:list", "x").Err())

	s := New(clusterTarget(cl, cc), Options{Retries: 2})
	census, err := s.Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	if len(got) != 3001 || len(census.Missing) != 0 || len(census.Warnings) != 0 {
		t.Fatalf("%d locks (want 3001), missing %v, warnings %v", len(got), census.Missing, census.Warnings)
	}
	perMaster := map[string]int{}
	for _, k := range keys {
		l := got[k]
		node, err := cc.MasterForKey(ctx, k)
		must(t, err)
		if l.Addr != node.Options().Addr || l.Quorum != nil || l.Format != FormatLockscope {
			t.Fatalf("%s: addr %s quorum %+v format %q, want master %s", k, l.Addr, l.Quorum, l.Format, node.Options().Addr)
		}
		perMaster[l.Addr]++
	}
	if len(perMaster) != 3 {
		t.Fatalf("locks found on %d masters, want 3: %v", len(perMaster), perMaster)
	}
	if l := got[keys[7]]; !l.HasFence || l.Fence != 1234 {
		t.Errorf("fence in the same slot not read: %+v", l)
	}
	if got["lock:c:list"].Format != FormatNotALock {
		t.Errorf("list under the pattern: %q", got["lock:c:list"].Format)
	}
	watched := map[string]Lock{}
	for u := range s.Watch(ctx) {
		if u.Kind == UpdateBatch {
			for _, l := range u.Locks {
				watched[l.Key] = l
			}
		}
		if u.Kind == UpdatePassDone || u.Kind == UpdateError {
			if u.Err != nil || len(u.Census.Missing) > 0 {
				t.Fatalf("watch pass: %v, missing %v", u.Err, u.Census.Missing)
			}
			break
		}
	}
	if len(watched) != 3001 || !watched[keys[7]].HasFence || watched[keys[7]].Fence != 1234 || !watched[keys[8]].HasWaiters {
		t.Errorf("watch pass on the cluster: %d keys, %s %+v", len(watched), keys[7], watched[keys[7]])
	}
	l, err := s.Get(ctx, keys[11])
	if err != nil || l.Key != keys[11] || l.Node != "node-4" {
		t.Errorf("Get on the cluster: %+v %v", l, err)
	}

	// Redisson's companions are in its lock's slot: a fair lock's queue is read there, a plain
	// lock's subscribers (which may be on any node) are not: unknown, not 0.
	owner := func(thread string) string { return redissonClient + ":" + thread }
	must(t, cc.HSet(ctx, "lock:c:fair", owner("63"), "1").Err())
	must(t, cc.RPush(ctx, "redisson_lock_queue:{lock:c:fair}", owner("64")).Err())
	must(t, cc.ZAdd(ctx, "redisson_lock_timeout:{lock:c:fair}", redisZ(float64(time.Now().Add(time.Minute).UnixMilli()), owner("64"))).Err())
	must(t, cc.Set(ctx, "redisson_lock_token:{lock:c:fair}", "5", 0).Err())
	must(t, cc.HSet(ctx, "lock:c:plain", owner("61"), "1").Err())
	if l, err := s.Get(ctx, "lock:c:fair"); err != nil || !l.HasWaiters || l.Waiters != 1 || l.Fence != 5 {
		t.Errorf("Redisson fair lock on the cluster: waiters %d/%v fence %d (%v), want 1 and 5", l.Waiters, l.HasWaiters, l.Fence, err)
	}
	if l, err := s.Get(ctx, "lock:c:plain"); err != nil || l.HasWaiters {
		t.Errorf("Redisson lock on the cluster: waiters %d known %v (%v), want unknown", l.Waiters, l.HasWaiters, err)
	}
	// Shared primitives read on the cluster: a lease set with its limit, a Redisson
	// permit-expirable semaphore with its permits (each in its lock's slot).
	now := time.Now()
	must(t, cc.ZAdd(ctx, "lock:c:sem", redisZ(float64(now.Add(time.Minute).UnixMilli()),
		leaseMember(protocol.ModePermit, opID+":1", "job-1", randA, now))).Err())
	must(t, cc.PExpire(ctx, "lock:c:sem", time.Minute).Err())
	must(t, cc.Set(ctx, protocol.LimitKey("lock:c:sem"), "2", 0).Err())
	must(t, cc.Set(ctx, "lock:c:psem", "1", 0).Err())
	must(t, cc.ZAdd(ctx, "{lock:c:psem}:timeout", redisZ(float64(now.Add(time.Minute).UnixMilli()), "permit")).Err())
	if l, err := s.Get(ctx, "lock:c:sem"); err != nil || l.Kind() != KindSemaphore || l.Shared.Limit != 2 || l.Shared.InUse != 1 {
		t.Errorf("lease semaphore on the cluster: %+v (%v)", l.Shared, err)
	}
	if l, err := s.Get(ctx, "lock:c:psem"); err != nil || l.Kind() != KindPermitSemaphore || l.Shared.Limit != 2 || l.Shared.InUse != 1 {
		t.Errorf("permit-expirable semaphore on the cluster: %+v (%v)", l.Shared, err)
	}
	for _, k := range []string{"lock:c:fair", "lock:c:plain", "lock:c:sem", "lock:c:psem"} {
		must(t, cc.Del(ctx, k).Err())
	}

	dead := cl.Nodes[1].Addr
	cl.Nodes[1].Kill()
	start := time.Now()
	census, err = s.Census(ctx)
	must(t, err)
	if len(census.Missing) != 1 || census.Missing[0] != dead {
		t.Fatalf("missing %v, want [%s]", census.Missing, dead)
	}
	if !hasWarning(census.Warnings, dead) {
		t.Errorf("no warning names %s: %v", dead, census.Warnings)
	}
	if want := 3000 - perMaster[dead]; len(census.Locks) < want || len(census.Locks) > 3001 {
		t.Errorf("%d locks with one master down, want the other masters' %d", len(census.Locks), want)
	}
	for _, l := range census.Locks {
		if l.Addr == dead {
			t.Fatalf("lock %s attributed to the dead master", l.Key)
		}
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("census with a dead master took %v", took)
	}

	// The node comes back (empty): the next census is complete again, without its old keys.
	cl.Nodes[1].Restart()
	must(t, cl.WaitOK(20*time.Second))
	deadline := time.Now().Add(15 * time.Second)
	for {
		census, err = s.Census(ctx)
		if err == nil && len(census.Missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: err %v missing %v", err, census.Missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
	onDead := 0 // locks the dead master held before, the list key included
	for _, l := range got {
		if l.Addr == dead {
			onDead++
		}
	}
	if n := len(census.Locks); n != 3001-onDead {
		t.Errorf("after restart %d locks, want %d", n, 3001-onDead)
	}
}
