package locklib

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/internal/redistest"
)

// calls counts the server's calls of each command since the last CONFIG RESETSTAT.
func calls(t *testing.T, admin *redis.Client, command string) int64 {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return redistest.CommandStats(info)[command].Calls
}

// cycle obtains and releases key, and fails the test if either fails.
func cycle(t *testing.T, c *Client, key string) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, key, 5*time.Second)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The scripts run as functions of the library, which is loaded once and loaded again when it
// is gone: after FUNCTION FLUSH and after a restart of the server without persistence.
func TestFunctionsLoadedAgain(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	admin := srv.Client()
	ctx := context.Background()
	for _, gone := range []struct {
		what string
		how  func()
	}{
		{"a new server", func() {}},
		{"FUNCTION FLUSH", func() { admin.FunctionFlush(ctx) }},
		{"a restart", srv.Restart},
	} {
		gone.how()
		admin.ConfigResetStat(ctx)
		cycle(t, c, "lock:functions")
		if n := calls(t, admin, "function|load"); n != 1 {
			t.Errorf("after %s: %d FUNCTION LOADs, want 1", gone.what, n)
		}
		if n := calls(t, admin, "evalsha") + calls(t, admin, "eval"); n != 0 {
			t.Errorf("after %s: %d scripts sent, want none", gone.what, n)
		}
		cycle(t, c, "lock:functions")
		if n := calls(t, admin, "fcall"); n != 5 { // a missing one, then four that ran
			t.Errorf("after %s: %d FCALLs, want 5", gone.what, n)
		}
	}
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "lockscope_*"}).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != functionLibrary.name {
		t.Fatalf("libraries %v (%v), want %s", libs, err, functionLibrary.name)
	}
}

// A user whose ACL refuses FCALL, or FUNCTION LOAD while the library is not loaded, gets the
// same locks through scripts (EVALSHA); one that may call the loaded library uses it.
func TestFunctionsRefusedByACL(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	ctx := context.Background()
	for _, u := range []struct {
		name, rules string
		loaded      bool // the library is loaded before (by an operator)
		functions   bool // the user's calls use it
	}{
		{"nofcall", "-fcall -function", true, false},
		{"noload", "-function", false, false},
		{"callonly", "-function", true, true},
	} {
		t.Run(u.name, func(t *testing.T) {
			admin.FunctionFlush(ctx)
			if u.loaded {
				if err := loadLibrary(ctx, admin); err != nil {
					t.Fatal(err)
				}
			}
			args := []any{"ACL", "SETUSER", u.name, "on", ">pw", "~*", "&*", "+@all"}
			for _, r := range strings.Fields(u.rules) {
				args = append(args, r)
			}
			if err := admin.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			c := New(srv.Client(func(o *redis.Options) { o.Username, o.Password = u.name, "pw" }))
			t.Cleanup(func() { _ = c.Close() })
			admin.ConfigResetStat(ctx)
			for range 3 {
				cycle(t, c, "lock:acl")
			}
			fcalls, scripts := calls(t, admin, "fcall"), calls(t, admin, "evalsha")+calls(t, admin, "eval")
			if u.functions && (fcalls != 6 || scripts != 0) || !u.functions && (fcalls > 1 || scripts < 6) {
				t.Fatalf("%d FCALLs and %d scripts for 3 cycles (functions: %v)", fcalls, scripts, u.functions)
			}
			// The multi-key scripts run either way too.
			m, err := c.ObtainMulti(ctx, []string{"lock:acl:a", "lock:acl:b"}, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Refresh(ctx, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if d, err := m.TTL(ctx); err != nil || d <= 0 {
				t.Fatalf("TTL %v, %v", d, err)
			}
			if err := m.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// In a cluster the library is loaded on every master, and again where a master lost it.
func TestFunctionsInCluster(t *testing.T) {
	redistest.Slow(t)
	cluster := redistest.StartCluster(t, 3)
	rdb := cluster.Client()
	c := New(rdb)
	defer c.Close()
	ctx := testCtx(t, 30*time.Second)
	keys := []string{"lock:order:1", "lock:order:2", "lock:order:3", "lock:order:4", "lock:order:5", "lock:order:6"}
	for _, key := range keys {
		cycle(t, c, key)
	}
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: functionLibrary.name}).Result()
		if err == nil && len(libs) != 1 {
			err = fmt.Errorf("%s: libraries %v", m.Options().Addr, libs)
		}
		if err == nil {
			err = m.FunctionFlush(ctx).Err()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		cycle(t, c, key)
	}
}

// A server out of memory (noeviction) that lost the library (FUNCTION FLUSH, a new master)
// refuses FUNCTION LOAD (denyoom); the release must still release, as its script form does.
func TestReleaseOutOfMemoryWithoutLibrary(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "noeviction"))
	c, _ := newTestClient(t, srv)
	admin := srv.Client()
	ctx := testCtx(t, 10*time.Second)
	l := mustObtain(t, c, ctx, "lock:oom", time.Minute)
	if err := admin.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ConfigSet(context.Background(), "maxmemory", "0") })
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if n, _ := admin.Exists(ctx, "lock:oom").Result(); n != 0 {
		t.Errorf("lock:oom still held after Release")
	}
}

// busy keeps the server's one thread busy in a script for d, as a slow command of another
// client does.

// Calls that all find the library gone at once (FUNCTION FLUSH under load) load it once, not
// once each: every load compiles the whole library on the server's one thread.
func TestFunctionsLoadedOnceByConcurrentCalls(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	admin := srv.Client()
	ctx := testCtx(t, 20*time.Second)
	cycle(t, c, "lock:herd")
	admin.FunctionFlush(ctx)
	admin.ConfigResetStat(ctx)
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() {
			l, err := c.Obtain(ctx, fmt.Sprintf("lock:herd:%d", i), 5*time.Second)
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if loads := calls(t, admin, "function|load"); loads != 1 {
		t.Errorf("%d FUNCTION LOADs for %d calls that found the library gone, want 1", loads, n)
	}
}

// A call refused because the user's ACL does not cover its keys is that call's error; it does
// not mean that Functions are refused: the Client's other calls still use them.
func TestFunctionsKeptAfterAKeyRefusedByACL(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	ctx := testCtx(t, 10*time.Second)
	if err := admin.Do(ctx, "ACL", "SETUSER", "keys", "on", ">pw", "~*{lock:ok}", "~lock:ok", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	c := New(srv.Client(func(o *redis.Options) { o.Username, o.Password = "keys", "pw" }))
	t.Cleanup(func() { _ = c.Close() })
	cycle(t, c, "lock:ok")
	if _, err := c.Obtain(ctx, "lock:other", time.Second); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Obtain on a key outside the user's ACL: %v, want NOPERM", err)
	}
	admin.ConfigResetStat(ctx)
	cycle(t, c, "lock:ok")
	if fcalls, scripts := calls(t, admin, "fcall"), calls(t, admin, "evalsha")+calls(t, admin, "eval"); fcalls != 2 || scripts != 0 {
		t.Fatalf("%d FCALLs and %d scripts for a cycle, want 2 and 0", fcalls, scripts)
	}
}
