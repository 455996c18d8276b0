package scanner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// testCtx is a context that ends with the test, with a generous bound against hangs.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func standalone(c *redis.Client, addr string) connect.Target {
	return connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{c}, Addrs: []string{addr}}
}

// startStandalone starts a server and returns it, a client and a scanner target for it.
func startStandalone(t *testing.T) (*redistest.Server, *redis.Client, connect.Target) {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client()
	return srv, c, standalone(c, srv.Addr)
}

// byKey indexes a census and fails the test on a key present twice.
func byKey(t *testing.T, locks []Lock) map[string]Lock {
	t.Helper()
	m := make(map[string]Lock, len(locks))
	for _, l := range locks {
		if _, dup := m[l.Key]; dup {
			t.Errorf("key %q appears twice in the census", l.Key)
		}
		m[l.Key] = l
	}
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

func xadd(stream string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: stream, Values: []any{"f", "v"}}
}

func keysOf(m map[string]Lock) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// loadLocks writes n lockscope-format locks lock:<prefix>:<i> with a 10-minute TTL, pipelined.
func loadLocks(t testing.TB, c redis.Cmdable, prefix string, n int) []string {
	t.Helper()
	keys, err := writeLocks(c, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// writeLocks is loadLocks for goroutines other than the test's.
func writeLocks(c redis.Cmdable, prefix string, n int) ([]string, error) {
	ctx := context.Background()
	keys := make([]string, n)
	for start := 0; start < n; start += 1000 {
		pipe := c.Pipeline()
		for i := start; i < min(start+1000, n); i++ {
			keys[i] = fmt.Sprintf("lock:%s:%07d", prefix, i)
			pipe.Set(ctx, keys[i], fmt.Sprintf("node-%d:-:1764400000123:%016x", i%7, i), 10*time.Minute)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func isUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}
