package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestServerLifecycle(t *testing.T) {
	Slow(t)
	s := Start(t)
	c := s.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after restart: exists=%d err=%v, want empty server", n, err)
	}

	s.Pause()
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("PING answered while the server was paused")
	}
	s.Resume()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after resume: %v", err)
	}

	s.Kill()
	if s.Running() {
		t.Fatal("Running() after Kill")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
}

func TestProxyCutAndDelay(t *testing.T) {
	s := Start(t)
	p := NewProxy(t, s.Addr)
	c := s.Client(func(o *redis.Options) { o.Addr = p.Addr; o.MaxRetries = -1 })
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	p.SetDelay(100 * time.Millisecond)
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("delayed PING took %v, want at least 100ms", d)
	}
	p.SetDelay(0)
	p.Cut()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING went through a cut proxy")
	}
	p.Restore()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
