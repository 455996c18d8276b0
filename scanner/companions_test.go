package scanner

import (
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

func TestWidenedPattern(t *testing.T) {
	if got := widenedPattern("lock:*"); got != "*lock:*" {
		t.Errorf("widened lock:* = %q", got)
	}
	if got := widenedPattern("lock:a"); got != "*lock:a*" {
		t.Errorf("widened lock:a = %q", got)
	}
}

// TestCensusFindsCompanionsByScan: hash-tagged and plain keys, fence and wait queue found by
// the widened SCAN; companions of keys outside the pattern, and orphan companions, do not
// become locks.
func TestCensusFindsCompanionsByScan(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	v := "api-1:-:1764400000123:0123456789abcdef"
	for _, k := range []string{"lock:{order}:1", "lock:plain", "other:x"} {
		must(t, c.Set(ctx, k, v, time.Minute).Err())
		must(t, c.Set(ctx, protocol.FenceKey(k), "42", 0).Err())
		must(t, c.ZAdd(ctx, protocol.WaitQueueKey(k), redisZ(1, "w")).Err())
	}
	must(t, c.Set(ctx, protocol.FenceKey("lock:released"), "7", 0).Err()) // its lock is gone
	must(t, c.Set(ctx, "lock:nofence", v, time.Minute).Err())

	census, err := New(target, Options{}).Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	if len(got) != 3 {
		t.Fatalf("locks %v, want the 3 lock:* keys", keysOf(got))
	}
	for _, k := range []string{"lock:{order}:1", "lock:plain"} {
		if l := got[k]; !l.HasFence || l.Fence != 42 || !l.HasWaiters || l.Waiters != 1 {
			t.Errorf("%s: fence %d/%v waiters %d/%v", k, l.Fence, l.HasFence, l.Waiters, l.HasWaiters)
		}
	}
	if l := got["lock:nofence"]; l.HasFence || !l.HasWaiters || l.Waiters != 0 {
		t.Errorf("lock:nofence: fence %v waiters %d/%v", l.HasFence, l.Waiters, l.HasWaiters)
	}
}
