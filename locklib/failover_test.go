package locklib

import (
	"errors"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// locklib works unchanged over go-redis's failover client: a lock obtained before a
// SENTINEL FAILOVER, and one obtained before its master is killed, are renewed (by Refresh
// and by the watchdog), read and released through the promoted replica; new locks are taken
// there, with WithReplicas too.
func TestSentinelFailover(t *testing.T) {
	redistest.Slow(t)
	r := redistest.StartReplicated(t, 2, 3)
	rdb := r.Client()
	c := New(rdb, WithNode("a"))
	defer c.Close()
	waited := New(r.Client(), WithNode("b"), WithReplicas(1, time.Second))
	defer waited.Close()
	ctx := testCtx(t, 90*time.Second)

	for _, fault := range []string{"SENTINEL FAILOVER", "master killed"} {
		// Renewed every 3 s: a killed master's failover (2 to 4 s) costs it a renewal or two.
		dog := mustObtain(t, c, ctx, "lock:fo:dog", 9*time.Second, WithWatchdog(), WithMaxRenewals(0))
		plain := mustObtain(t, c, ctx, "lock:fo:plain", 20*time.Second)
		confirmed := mustObtain(t, waited, ctx, "lock:fo:waited", 20*time.Second)
		if err := r.WaitSynced(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		before, _ := r.Master()
		var err error
		if fault == "SENTINEL FAILOVER" {
			_, err = r.Failover(20 * time.Second)
		} else {
			_, _, err = r.KillMaster(20 * time.Second)
		}
		if err != nil {
			t.Fatal(err)
		}
		redistest.Eventually(t, fault+": the failover client reaches the new master", func() bool {
			return plain.Refresh(ctx, 20*time.Second) == nil
		})
		redistest.Eventually(t, fault+": the watchdog renews through the new master", func() bool {
			ttl, err := dog.TTL(ctx)
			return err == nil && ttl > 8500*time.Millisecond
		})
		select {
		case <-dog.Lost():
			t.Fatalf("%s: the watchdog's lock was lost: %v", fault, dog.Err())
		default:
		}
		for _, l := range []*Lock{dog, plain, confirmed} {
			if ttl, err := l.TTL(ctx); err != nil || ttl <= 0 {
				t.Fatalf("%s: %s after the failover: ttl %v, %v", fault, l.Key(), ttl, err)
			}
		}
		// Until a replica has attached to the new master, and synced, nothing confirms.
		if err := confirmed.Refresh(ctx, 20*time.Second); !errors.Is(err, ErrNotReplicated) && err != nil {
			t.Fatalf("%s: a WithReplicas renewal on the new master: %v", fault, err)
		}
		if err := r.WaitSynced(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := confirmed.Refresh(ctx, 20*time.Second); err != nil {
			t.Fatalf("%s: a WithReplicas renewal on the new master, its replicas in sync: %v", fault, err)
		}
		if _, err := c.TryObtain(ctx, "lock:fo:plain", time.Second); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("%s: the lock kept through the failover is free on the new master: %v", fault, err)
		}
		for _, l := range []*Lock{dog, plain, confirmed} {
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: release %s: %v", fault, l.Key(), err)
			}
		}
		l := mustObtain(t, waited, ctx, "lock:fo:after", time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if fault == "master killed" {
			if err := r.Rejoin(before, 20*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A Redis Cluster with replicas: locks on the slot of a master whose replica is promoted by
// CLUSTER FAILOVER FORCE are renewed, by the watchdog too, and released there.
func TestClusterFailoverForce(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1))
	// go-redis reloads its slot map every ClusterStateReloadInterval or on a MOVED reply.
	c := New(cl.Client(func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = 500 * time.Millisecond }), WithNode("a"))
	defer c.Close()
	ctx := testCtx(t, 60*time.Second)
	const key = "lock:{fo}"
	dog := mustObtain(t, c, ctx, key, 3*time.Second, WithWatchdog(), WithMaxRenewals(0))
	plain := mustObtain(t, c, ctx, "lock:{fo}:plain", 20*time.Second, Reentrant("o"))
	if err := cl.WaitReplicasSynced(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	_, replicas, err := cl.MasterOf(key)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("master of %s: replicas %v, %v", key, replicas, err)
	}
	if err := cl.FailoverForce(replicas[0], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "every node names the promoted replica master of "+key, func() bool {
		now, _, err := cl.MasterOf(key)
		return err == nil && now == replicas[0]
	})
	redistest.Eventually(t, "a Refresh through the promoted replica", func() bool {
		return plain.Refresh(ctx, 20*time.Second) == nil
	})
	time.Sleep(2 * time.Second)
	select {
	case <-dog.Lost():
		t.Fatalf("the watchdog's lock was lost: %v", dog.Err())
	default:
	}
	if _, err := c.TryObtain(ctx, key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("the lock kept through FAILOVER FORCE is free on the new master: %v", err)
	}
	for _, l := range []*Lock{dog, plain} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Fencing tokens stay strictly increasing across a promotion whose new master's fence
// counter is behind: replication is stalled while the old master hands out tokens, so the
// promoted replica's counter is older than the last token given. The counter alone would go
// back; nextToken's floor, the server clock in microseconds, is above every earlier token.
func TestFenceTokensAcrossPromotion(t *testing.T) {
	redistest.Slow(t)
	r := redistest.StartReplicated(t, 1, 1)
	rdb := r.Client()
	c := New(rdb, WithNode("a"), WithFenceRetention(time.Hour))
	defer c.Close()
	ctx := testCtx(t, 60*time.Second)
	const key = "lock:fence"
	next := func() int64 {
		t.Helper()
		l := mustObtain(t, c, ctx, key, 10*time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return l.Token()
	}
	replicated := next()
	if err := r.WaitSynced(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	resume, err := r.StallReplication()
	if err != nil {
		t.Fatal(err)
	}
	last := replicated
	for range 20 {
		tok := next()
		if tok <= last {
			t.Fatalf("token %d after %d on one master", tok, last)
		}
		last = tok
	}
	old, err := r.Master()
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	resume()
	promoted, err := r.WaitPromoted(old, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	counter, err := promoted.Client().Get(ctx, protocol.FenceKey(key)).Int64()
	if err != nil {
		t.Fatalf("the promoted replica's fence counter: %v", err)
	}
	if counter >= last {
		t.Fatalf("the promoted replica's counter %d is not behind the last token %d: the test shows nothing", counter, last)
	}
	var after int64
	redistest.Eventually(t, "an Obtain on the promoted replica", func() bool {
		l, err := c.TryObtain(ctx, key, 10*time.Second)
		if err != nil {
			return false
		}
		after = l.Token()
		return l.Release(ctx) == nil
	})
	t.Logf("last token on the old master %d; the promoted replica's counter %d (%d behind); first token after the promotion %d (%d above the last)",
		last, counter, last-counter, after, after-last)
	if after <= last {
		t.Fatalf("token %d after the promotion is not above %d, the last one before it", after, last)
	}
}
