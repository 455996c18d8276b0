package demo

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The naive lock makes the mistakes it stands for: it learns of the loss only at its next
// renewal, and its release deletes the key whoever holds it now.
func TestNaiveLockReleaseDeletesAnotherHoldersKey(t *testing.T) {
	t.Parallel()
	e := embedded(t, 1)
	rdb := redis.NewClient(embeddedClientOptions(e.Addrs()[0]))
	defer rdb.Close()
	ctx := context.Background()
	var set []string
	n := &naiveLocker{rdb: rdb, node: "demo-w1", acquired: func(key, value string) { set = append(set, value) }}
	const key, ttl = "lock:naive:orders", time.Second
	l, err := n.obtain(ctx, key, ttl, "w1-1")
	if err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 0 || pttl > ttl {
		t.Fatalf("PTTL %v after obtain, want the TTL set by the EXPIRE", pttl)
	}
	if len(set) != 1 || set[0] != l.Value() || rdb.Get(ctx, key).Val() != l.Value() {
		t.Fatalf("acquired %v, key %q, lock value %q", set, rdb.Get(ctx, key).Val(), l.Value())
	}
	// The lock passes to another holder (as after an expiry): the renewal's GET notices.
	if err := rdb.Set(ctx, key, "demo-w2:w2-1:1764489600123:0123456789abcdef", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("the renewal did not notice the key changed hands")
	}
	if l.Err() == nil {
		t.Error("lost without a reason")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the naive release left the other holder's key: it is meant to DEL it without a check")
	}
}
