package locklib

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// TestLeaseScripts runs the scripts every lease-set kind shares on members written by hand:
// pttl, refresh (never shortens, follows the set's TTL), release (run twice: one success), an expired member holds nothing, and the set goes with its last member.
func TestLeaseScripts(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	s := c.store.(*singleStore)
	ctx := testCtx(t, 10*time.Second)
	key := "lock:lease:scripts"
	member := func(mode protocol.Mode, n string) string {
		return protocol.LeaseMember{Mode: mode, Op: c.id + ":" + n, Value: protocol.NewValue("test", "", time.Now())}.String()
	}
	now := time.Now().UnixMilli()
	r1, r2, old := member(protocol.ModeRead, "1"), member(protocol.ModeRead, "2"), member(protocol.ModeRead, "3")
	if err := rdb.ZAdd(ctx, key, redisZ(float64(now+5000), r1), redisZ(float64(now+20000), r2), redisZ(float64(now-1), old)).Err(); err != nil {
		t.Fatal(err)
	}
	h1 := hold{kind: kindRead, key: key, match: r1, op: c.id + ":1"}
	h2 := hold{kind: kindRead, key: key, match: r2, op: c.id + ":2"}
	hOld := hold{kind: kindRead, key: key, match: old, op: c.id + ":3"}

	if d, err := s.pttl(ctx, h1); err != nil || d <= 4*time.Second || d > 5*time.Second {
		t.Fatalf("pttl = %v, %v; want about 5s", d, err)
	}
	if d, err := s.pttl(ctx, hOld); err != nil || d != 0 {
		t.Fatalf("pttl of an expired member = %v, %v; want 0", d, err)
	}
	if _, err := s.refresh(ctx, hOld, time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("refresh of an expired member: %v, want ErrNotHeld", err)
	}
	// A shorter refresh changes nothing; a longer one moves the member and the set's TTL.
	if _, err := s.refresh(ctx, h1, time.Second); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.pttl(ctx, h1); d <= 4*time.Second {
		t.Fatalf("a 1s refresh shortened a 5s lease to %v", d)
	}
	if _, err := s.refresh(ctx, h1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := rdb.PTTL(ctx, key).Val(); d <= 29*time.Second {
		t.Fatalf("the set's PTTL is %v after a 30s refresh, want the latest deadline", d)
	}
	if n := rdb.ZCard(ctx, key).Val(); n != 2 {
		t.Fatalf("%d members after the refresh, want 2: the expired one pruned", n)
	}
	if err := s.release(ctx, h1); err != nil {
		t.Fatal(err)
	}
	if d := rdb.PTTL(ctx, key).Val(); d > 20*time.Second || d < 19*time.Second {
		t.Fatalf("the set's PTTL is %v after the release, want the remaining member's 20s", d)
	}
	if err := s.release(ctx, h1); err != nil {
		t.Fatalf("the same release run again: %v, want the first copy's success (ended set)", err)
	}
	if err := s.release(ctx, hOld); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of an expired member: %v, want ErrNotHeld", err)
	}
	if err := s.release(ctx, h2); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the set outlived its last member")
	}
}

// TestRedlockRefusesLeaseKinds: every kind but the plain lock fails on a Redlock client with
// ErrInvalid, before any request.
func TestRedlockRefusesLeaseKinds(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := NewRedlock([]redis.UniversalClient{rdb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, k := range []kind{kindRead, kindWrite, kindPermit, kindMulti} {
		_, err := c.obtain(context.Background(), obtainCall{name: "Call", kind: k, key: "lock:rl:kinds", ttl: time.Second}, nil)
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("kind %d on Redlock: %v, want ErrInvalid", k, err)
		}
	}
	if n := mr.CommandCount(); n != 0 {
		t.Fatalf("%d commands sent for refused calls", n)
	}
}
