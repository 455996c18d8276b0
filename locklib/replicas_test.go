package locklib

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// With WithReplicas an Obtain returns once the replicas have the lock; when fewer confirm,
// the Obtain releases it and fails at once, and a renewal fails without moving the validity.
func TestWithReplicas(t *testing.T) {
	r := redistest.StartReplicated(t, 2, 1)
	master, replicas := r.Nodes[0], r.Nodes[1:]
	// A WAIT that replicas in sync answer in a millisecond or two, with room for a loaded machine.
	c, rdb := newTestClient(t, master, WithReplicas(2, time.Second))
	ctx := testCtx(t, 30*time.Second)

	l := mustObtain(t, c, ctx, "lock:rep", 3*time.Second, WithTrace("t1"))
	for _, n := range replicas {
		if v, err := n.Client().Get(ctx, "lock:rep").Result(); err != nil || v != l.Value() {
			t.Fatalf("replica %s right after Obtain: %q, %v; want %q", n.Addr, v, err, l.Value())
		}
	}
	if err := l.Refresh(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	// A multi-key lock: every key on the replicas when ObtainMulti returns, and a renewal of
	// them all confirmed.
	set := []string{"lock:{rep}:a", "lock:{rep}:b"}
	m, err := c.ObtainMulti(ctx, set, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range replicas {
		for _, key := range set {
			if v, err := n.Client().Get(ctx, key).Result(); err != nil || v != m.Value() {
				t.Fatalf("replica %s right after ObtainMulti: %s holds %q, %v; want %q", n.Addr, key, v, err, m.Value())
			}
		}
	}
	if err := m.Refresh(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	checkRWReplicated(t, c, rdb, replicas, false)

	replicas[0].Pause() // one of the two replicas stops acknowledging
	defer replicas[0].Resume()
	err = l.Refresh(ctx, 5*time.Second)
	var re *ReplicationError
	if !errors.Is(err, ErrNotReplicated) || errors.Is(err, ErrBackend) || !errors.As(err, &re) || re.Acked != 1 || re.Wanted != 2 {
		t.Fatalf("Refresh with a replica frozen: %v (%+v), want a ReplicationError 1 of 2", err, re)
	}
	if pttl := rdb.PTTL(ctx, "lock:rep").Val(); pttl < 3500*time.Millisecond {
		t.Fatalf("the master did extend the lock (PTTL %v): the refusal is the replicas', not the master's", pttl)
	}
	// The validity stays where the last confirmed renewal put it, whatever the master says.
	waitLost(t, l, 4*time.Second, "at the validity the unconfirmed renewal did not move", ErrValidityPassed)

	for _, try := range []bool{true, false} {
		key := fmt.Sprintf("lock:rep:%v", try)
		began := time.Now()
		var err error
		if try {
			_, err = c.TryObtain(ctx, key, 5*time.Second)
		} else {
			_, err = c.Obtain(ctx, key, 5*time.Second) // fails at once: not retried until ctx ends
		}
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) || !errors.As(err, &re) || re.Acked != 1 {
			t.Fatalf("try %v with a replica frozen: %v, want ErrNotObtained and ErrNotReplicated, 1 acked", try, err)
		}
		if d := time.Since(began); d > 4*time.Second {
			t.Fatalf("try %v failed after %v: retried", try, d)
		}
		waitGone(t, rdb, key, 2*time.Second) // released: nobody holds a lock no Obtain returned
	}
	if _, err := c.TryObtainMulti(ctx, set, 5*time.Second); !errors.Is(err, ErrNotObtained) || !errors.As(err, &re) || re.Acked != 1 {
		t.Fatalf("TryObtainMulti with a replica frozen: %v, want ErrNotObtained and ErrNotReplicated, 1 acked", err)
	}
	for _, key := range set {
		waitGone(t, rdb, key, 2*time.Second)
	}
	checkRWReplicated(t, c, rdb, replicas, true)
	replicas[0].Resume()
	l2 := mustObtain(t, c, ctx, "lock:rep:after", time.Second)
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A WAIT is bounded by the Obtain's context, not only by its own timeout: an Obtain whose
// context ends while its WAIT waits for a frozen replica returns then, with ErrNotObtained and
// the context's error, and its lock is released.
func TestWithReplicasContextEndsDuringWait(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 1)
	master, replica := r.Nodes[0], r.Nodes[1]
	c, rdb := newTestClient(t, master, WithReplicas(1, 3*time.Second))
	replica.Pause()
	defer replica.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.Obtain(ctx, "lock:rep:ctx", 10*time.Second)
	if d := time.Since(began); d > time.Second {
		t.Fatalf("Obtain returned %v after its context ended", d-300*time.Millisecond)
	}
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain whose context ended during its WAIT: %v", err)
	}
	waitGone(t, rdb, "lock:rep:ctx", 2*time.Second)
}

// WAIT counts the replicas that have the offset of its own connection's last command: on a
// connection that ran nothing yet it answers at once with every replica connected (measured on
// Redis 7.0.15), frozen or not. Here the pool keeps idle connections that ran nothing and hands
// out the oldest first (PoolFIFO), so a WAIT sent on "a" connection of the client, not the one
// that ran the script, confirms what the frozen replica does not have: this test then fails.
// When a reply is lost, go-redis sends the script again on another connection (the acquire
// script then finds the lock already taken and writes nothing): that must not confirm either.
func TestWithReplicasWaitsOnTheWritingConnection(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 1)
	master, replica := r.Nodes[0], r.Nodes[1]
	f := redistest.NewFaults(1)
	c := New(master.Client(f.Options, func(o *redis.Options) { o.PoolFIFO, o.MinIdleConns = true, 4 }),
		WithNode("test"), WithReplicas(1, time.Second))
	defer c.Close()
	ctx := testCtx(t, 20*time.Second)
	l := mustObtain(t, c, ctx, "lock:warm", time.Second)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A lock that runs out before its confirmation reaches the server is not obtained.
	f.DelayRequest(isScriptWith(scriptRefresh, "lock:late"), 20*time.Millisecond)
	if _, err := c.TryObtain(ctx, "lock:late", 5*time.Millisecond); !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrBackend) {
		t.Fatalf("a lock gone before its confirmation: %v, want ErrNotObtained alone", err)
	}
	replica.Pause()
	defer replica.Resume()
	for _, drop := range []*serverScript{nil, scriptAcquire, scriptRefresh} {
		key, what := "lock:frozen", "no fault"
		var dropped <-chan struct{}
		if drop != nil {
			key, what = "lock:cut:"+drop.function, drop.function+"'s reply lost"
			dropped = f.DropReply(isScriptWith(drop, key))
		}
		l, err := c.TryObtain(ctx, key, 5*time.Second)
		if dropped != nil {
			select {
			case <-dropped:
			default:
				t.Fatalf("%s: the reply was not dropped", what)
			}
		}
		if err == nil {
			t.Fatalf("%s: a lock the frozen replica does not have was confirmed (token %d)", what, l.Token())
		}
		waitGone(t, master.Client(), key, 2*time.Second)
	}
}

// Redlock refuses WithReplicas, and so does every Obtain over a redis.Ring: neither has one
// connection to the master that wrote on which to send WAIT.
func TestWithReplicasRefused(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := NewRedlock([]redis.UniversalClient{srv.Client()}, WithReplicas(1, time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewRedlock with WithReplicas: %v, want ErrInvalid", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}})
	defer ring.Close()
	c := New(ring, WithReplicas(1, time.Second))
	defer c.Close()
	if _, err := c.TryObtain(context.Background(), "lock:ring", time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("TryObtain over a Ring with WithReplicas: %v, want ErrInvalid", err)
	}
}

// In a cluster the confirmation goes to the master of the key's slot: every lock is on its
// master's replica when Obtain returns.
func TestWithReplicasCluster(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1))
	c := New(cl.Client(), WithNode("test"), WithReplicas(1, time.Second))
	defer c.Close()
	ctx := testCtx(t, 30*time.Second)
	for i := range 6 {
		key := fmt.Sprintf("lock:{rep%d}", i)
		l, err := c.Obtain(ctx, key, 5*time.Second, Reentrant("o"), WithWatchdog())
		if err != nil {
			t.Fatal(err)
		}
		_, replicas, err := cl.MasterOf(key)
		if err != nil || len(replicas) != 1 {
			t.Fatalf("%s: replicas %v, %v", key, replicas, err)
		}
		rc := replicas[0].Client(func(o *redis.Options) { o.Protocol = 2 })
		if err := rc.Do(ctx, "READONLY").Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := rc.Get(ctx, key).Result(); err != nil || v != l.Value() {
			t.Fatalf("%s on its replica right after Obtain: %q, %v", key, v, err)
		}
		if err := l.Refresh(ctx, 6*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// With the replica of one key's master stalled, that key is refused and a key of another
	// master is not: the WAIT is sent, and to the master that wrote the lock.
	stalledKey := "lock:{rep0}"
	master, _, resume, err := cl.StallReplication(stalledKey)
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	if _, err := c.TryObtain(ctx, stalledKey, 5*time.Second); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("%s with its master's replica stalled: %v, want ErrNotReplicated", stalledKey, err)
	}
	for i := 1; ; i++ {
		key := fmt.Sprintf("lock:{rep%d}", i)
		m, _, err := cl.MasterOf(key)
		if err != nil {
			t.Fatal(err)
		}
		if m == master {
			continue
		}
		l, err := c.TryObtain(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatalf("%s, on a master whose replica is not stalled: %v", key, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		break
	}
}
