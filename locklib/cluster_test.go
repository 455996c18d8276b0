package locklib

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// Every script touches only a lock key and its companions, which share a slot; wake-ups
// published by a script on one master reach a waiter subscribed through another. A
// multi-key lock's keys must share one slot (checkCrossSlot).
func TestRedisCluster(t *testing.T) {
	redistest.Slow(t)
	cluster := redistest.StartCluster(t, 3)
	a := New(cluster.Client(), WithNode("a"))
	defer a.Close()
	b := New(cluster.Client(), WithNode("b"))
	defer b.Close()
	ctx := testCtx(t, 30*time.Second)

	for i := range 6 { // keys spread over the masters, with and without a hash tag
		for _, key := range []string{fmt.Sprintf("lock:order:%d", i), fmt.Sprintf("lock:{order}:%d", i)} {
			l, err := a.Obtain(ctx, key, time.Second, Reentrant("job"), WithWatchdog())
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if l.Token() <= 0 {
				t.Fatalf("%s: token %d", key, l.Token())
			}
			if err := l.Refresh(ctx, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	const key = "lock:cluster:hot"
	held := mustObtain(t, a, ctx, key, 5*time.Second)
	got := make(chan error, 1)
	go func() {
		l, err := b.Obtain(ctx, key, time.Second) // another client: woken by a message
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	if _, err := a.TryObtain(ctx, "lock:a}b", time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a key whose companions are in another slot: %v, want ErrInvalid", err)
	}
	checkCrossSlot(t, cluster, a)
	clusterRW(t, a, b)
}
