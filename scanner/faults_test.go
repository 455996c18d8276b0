package scanner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// TestCensusWithoutGetPermission: an ACL user that may SCAN and PTTL but not read values
// still gets every key with its TTL, holders unknown, and exactly one warning.
func TestCensusWithoutGetPermission(t *testing.T) {
	srv, admin, _ := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, admin, "acl", 2500)
	must(t, admin.Set(ctx, protocol.FenceKey("lock:acl:0000001"), "99", 0).Err())
	must(t, admin.Do(ctx, "ACL", "SETUSER", "lister", "on", ">pw", "~*", "-@all", "+scan", "+pttl", "+ping", "+hello", "+client").Err())
	c := srv.Client(func(o *redis.Options) { o.Username, o.Password = "lister", "pw" })
	if err := c.Get(ctx, "lock:acl:0000001").Err(); !isNoPerm(err) {
		t.Fatalf("GET as lister: %v, want NOPERM", err)
	}

	census, err := New(standalone(c, srv.Addr), Options{}).Census(ctx)
	must(t, err)
	if len(census.Locks) != 2500 {
		t.Fatalf("%d locks, want 2500", len(census.Locks))
	}
	for _, l := range census.Locks {
		if l.Format != FormatUnknown || l.Node != "" || l.Type != "" || l.HasFence || l.HasWaiters {
			t.Fatalf("lock read without permission: %+v", l)
		}
		if l.NoExpiry || l.TTL < 9*time.Minute {
			t.Fatalf("TTL %v lost", l.TTL)
		}
	}
	if len(census.Warnings) != 1 || !strings.Contains(census.Warnings[0], "holders") {
		t.Fatalf("warnings %q, want exactly one about holders", census.Warnings)
	}
}

// TestWatchRetriesAfterConnectionDrop: the connection is cut mid-scan and restored; the pass
// says it is retrying, then completes with every key exactly once.
func TestWatchRetriesAfterConnectionDrop(t *testing.T) {
	srv, admin, _ := startStandalone(t)
	ctx := testCtx(t)
	keys := loadLocks(t, admin, "drop", 10_000)
	proxy := redistest.NewProxy(t, srv.Addr)
	// No retries inside go-redis: the scanner's own retry must be what recovers.
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })

	s := New(standalone(c, proxy.Addr), Options{Count: 100, Interval: time.Hour})
	seen := map[string]int{}
	retries := 0
	cut := false
	for u := range s.Watch(ctx) {
		switch u.Kind {
		case UpdateBatch:
			for _, l := range u.Locks {
				seen[l.Key]++
			}
			if !cut {
				cut = true
				proxy.Cut()
				time.AfterFunc(time.Second, proxy.Restore)
			}
		case UpdateRetrying:
			retries++
			if u.Addr != proxy.Addr || u.Err == nil {
				t.Errorf("retry update without address or error: %+v", u)
			}
		case UpdateError:
			t.Fatalf("pass failed: %v", u.Err)
		}
		if u.Kind == UpdatePassDone {
			if len(u.Census.Missing) > 0 || !hasWarning(u.Census.Warnings, "retried") {
				t.Errorf("pass summary: missing %v warnings %v", u.Census.Missing, u.Census.Warnings)
			}
			break
		}
	}
	if retries == 0 {
		t.Error("no UpdateRetrying after the connection was cut")
	}
	for _, k := range keys {
		if seen[k] != 1 {
			t.Fatalf("key %s seen %d times, want 1", k, seen[k])
		}
	}
}

// TestCensusUnreachable: a server that is down gives ErrUnreachable promptly, not a hang.
func TestCensusUnreachable(t *testing.T) {
	srv, _, target := startStandalone(t)
	srv.Kill()
	start := time.Now()
	census, err := New(target, Options{Retries: 2}).Census(testCtx(t))
	if err == nil || !isUnreachable(err) || len(census.Missing) != 1 || census.Missing[0] != srv.Addr {
		t.Fatalf("census of a dead server: %v, missing %v", err, census.Missing)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

func hasWarning(ws []string, part string) bool {
	for _, w := range ws {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}
