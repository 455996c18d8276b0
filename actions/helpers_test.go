package actions

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// standalone starts one server and returns its target and client.
func standalone(t *testing.T) (connect.Target, *redis.Client, *redistest.Server) {
	t.Helper()
	s := redistest.Start(t)
	c := s.Client()
	return connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{c}, Addrs: []string{s.Addr}}, c, s
}

// redlock starts n independent servers and returns their target and clients.
func redlock(t *testing.T, n int) (connect.Target, []*redis.Client, []*redistest.Server) {
	t.Helper()
	servers := redistest.StartN(t, n)
	target := connect.Target{Mode: connect.Redlock}
	var clients []*redis.Client
	for _, s := range servers {
		c := s.Client(func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 300 * time.Millisecond })
		clients = append(clients, c)
		target.Clients = append(target.Clients, c)
		target.Addrs = append(target.Addrs, s.Addr)
	}
	return target, clients, servers
}

// adminAs creates the ACL user user (password "pw") with rules on s, through c, and returns an
// Admin of target that acts as that user.
func adminAs(t *testing.T, ctx context.Context, c *redis.Client, s *redistest.Server, target connect.Target, user string, rules ...any) *Admin {
	t.Helper()
	if err := c.Do(ctx, append([]any{"ACL", "SETUSER", user, "on", ">pw"}, rules...)...).Err(); err != nil {
		t.Fatal(err)
	}
	limited := s.Client(func(o *redis.Options) { o.Username, o.Password = user, "pw" })
	return New(connect.Target{Mode: target.Mode, Clients: []redis.UniversalClient{limited}, Addrs: target.Addrs}, Options{})
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustSet(t *testing.T, c *redis.Client, key, value string, ttl time.Duration) {
	t.Helper()
	if err := c.Set(context.Background(), key, value, ttl).Err(); err != nil {
		t.Fatal(err)
	}
}

// auditEntries reads the raw audit stream of c, oldest first.
func auditEntries(t *testing.T, c *redis.Client) []redis.XMessage {
	t.Helper()
	msgs, err := c.XRange(context.Background(), DefaultAuditStream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
