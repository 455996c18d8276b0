package demo

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// TestRemoveKeysDeletesOnlyThisRunsLocks: on a shared server (--redis) the cleanup deletes the
// lock this run's workers left, never one held by another demo run on the same server (its
// workers are named demo-w1... too), nor that lock's companions.
func TestRemoveKeysDeletesOnlyThisRunsLocks(t *testing.T) {
	s := redistest.Start(t)
	rdb := s.Client()
	ctx := context.Background()
	now := time.Now()
	ours := protocol.NewValue("demo-w1", "w1-3", now).String()
	theirs := protocol.NewValue("demo-w1", "w1-7", now).String() // another run's worker 1
	c := &Controller{
		cfg:       Config{Servers: Servers{Addrs: []string{s.Addr}, Dial: func(int) redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: s.Addr}) }}},
		resources: []string{"lock:demo:a", "lock:demo:b"},
		checker:   newChecker(FencingTokens),
	}
	c.checker.open("lock:demo:a", 1, 1, ours, Healthy, 0)
	for key, value := range map[string]string{"lock:demo:a": ours, "lock:demo:b": theirs} {
		if err := rdb.Set(ctx, key, value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, protocol.FenceKey(key), 5, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RemoveKeys(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "lock:demo:a", protocol.FenceKey("lock:demo:a")).Val(); n != 0 {
		t.Errorf("this run's lock or its fence counter is left (%d keys)", n)
	}
	if rdb.Get(ctx, "lock:demo:b").Val() != theirs || rdb.Exists(ctx, protocol.FenceKey("lock:demo:b")).Val() != 1 {
		t.Errorf("another run's lock or its fence counter was deleted")
	}
}
