package locklib

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// The demo's embedded mode runs locklib against miniredis: the scripts must work there too.
// This is a compatibility test of that mode, not a stand-in for Redis.
func TestMiniredisCompatibility(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	c := New(rdb, WithNode("demo"))
	defer c.Close()
	ctx := context.Background()
	const key = "lock:demo:a"

	l := mustObtain(t, c, ctx, key, time.Second, Reentrant("worker-1"), WithTrace("t"))
	if l.Token() <= 0 {
		t.Fatalf("token %d", l.Token())
	}
	again := mustObtain(t, c, ctx, key, time.Second, Reentrant("worker-1"))
	if again.Token() != l.Token() {
		t.Fatalf("re-entry token %d, want %d", again.Token(), l.Token())
	}
	mr.CheckGet(t, key, again.Value())
	if v, err := protocol.ParseValue(again.Value()); err != nil || v.Count != 2 {
		t.Fatalf("re-entered value %q: %+v %v", again.Value(), v, err)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := l.TTL(ctx); err != nil || d <= time.Second {
		t.Fatalf("TTL after refresh %v, %v", d, err)
	}
	if _, err := c.TryObtain(context.Background(), key, time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtain of a held key: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if mr.Exists(key) {
		t.Fatal("key still exists after the last release")
	}
	next := mustObtain(t, c, context.Background(), key, time.Second)
	if next.Token() <= l.Token() {
		t.Fatalf("token %d after %d", next.Token(), l.Token())
	}
	// A waiter queues, is woken by the release, and takes the lock.
	waited := make(chan error, 1)
	go func() {
		w, err := c.Obtain(context.Background(), key, time.Second)
		if err == nil {
			err = w.Release(context.Background())
		}
		waited <- err
	}()
	for n, _ := mr.ZMembers(protocol.WaitQueueKey(key)); len(n) == 0; n, _ = mr.ZMembers(protocol.WaitQueueKey(key)) {
		time.Sleep(time.Millisecond)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}

	// Across clients the release wakes the waiter with a message: miniredis must deliver
	// what a script publishes.
	other := New(rdb, WithNode("demo-2"))
	defer other.Close()
	wakes := rdb.PSubscribe(ctx, protocol.WakeChannelPrefix+"*")
	defer wakes.Close()
	if _, err := wakes.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	held := mustObtain(t, c, ctx, key, time.Second)
	go func() {
		w, err := other.Obtain(context.Background(), key, time.Second)
		if err == nil {
			err = w.Release(context.Background())
		}
		waited <- err
	}()
	for n, _ := mr.ZMembers(protocol.WaitQueueKey(key)); len(n) == 0; n, _ = mr.ZMembers(protocol.WaitQueueKey(key)) {
		time.Sleep(time.Millisecond)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := wakes.ReceiveMessage(short)
	if err != nil || msg.Channel != protocol.WakeChannelPrefix+other.id {
		t.Fatalf("wake-up: %v %v", msg, err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}
