package actions

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// The keys of a multi-key lock go together, all or nothing: a key that changed hands since the
// operator looked keeps every key as it is; a key already gone is passed over.
func TestReleaseTogether(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "alice@ops"})
	keys := []string{"lock:{order-1}:payment", "lock:{order-1}:stock", "lock:{order-1}:mail"}
	for _, k := range keys {
		mustSet(t, c, k, lockValue, time.Minute)
	}
	const other = "w-2:-:1764489600123:fedcba9876543210"
	mustSet(t, c, keys[2], other, time.Minute)
	res, err := a.ReleaseTogether(ctx, keys, lockValue, "stuck")
	if err != nil || res.Outcome != ChangedHands {
		t.Fatalf("with a key changed hands: %q %v", res.Outcome, err)
	}
	if key, held := OtherKey(res); key != keys[2] || held != other {
		t.Fatalf("OtherKey = %q %q", key, held)
	}
	if n := c.Exists(ctx, keys...).Val(); n != 3 {
		t.Fatalf("%d keys left of 3 after a refusal", n)
	}

	c.Del(ctx, keys[2])
	const waiter = "9a8b7c6d5e4f3a2b:4"
	entry := waiter + "|30000|" + other
	c.ZAdd(ctx, protocol.WaitQueueKey(keys[1]), redis.Z{Score: 1, Member: entry})
	c.ZAdd(ctx, protocol.WaitPresenceKey(keys[1]), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: entry})
	ps := listen(t, c, protocol.WakeChannelPrefix+"*")
	if res, err = a.ReleaseTogether(ctx, keys, lockValue, "stuck"); err != nil || res.Outcome != Released {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	if n := c.Exists(ctx, keys...).Val(); n != 0 {
		t.Fatalf("%d keys left", n)
	}
	if msg, err := receiveWithin(ps, 5*time.Second); err != nil || msg.Payload != waiter+"\n"+keys[1] {
		t.Fatalf("the waiter of %s told %v %v", keys[1], msg, err)
	}
	if res, _ = a.ReleaseTogether(ctx, keys, lockValue, ""); res.Outcome != AlreadyGone {
		t.Fatalf("again: %q", res.Outcome)
	}
	recs, err := a.Audit(ctx, 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records %v", len(recs), err)
	}
	if r := recs[1]; r.Action != ActionReleaseTogether || !slices.Equal(r.Keys, keys) || r.Key != keys[0] || r.Result != Released || r.Seen != lockValue {
		t.Fatalf("record %+v", r)
	}

	for _, bad := range [][]string{nil, {"lock:a"}, {"lock:a", "lock:a"}, {"lock:a", ""}} {
		if _, err := a.ReleaseTogether(ctx, bad, lockValue, ""); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%q: %v, want ErrBadRequest", bad, err)
		}
	}
}

// On a cluster, keys in different hash slots were never taken together: refused before
// anything is sent (this target has no server at all).
func TestReleaseTogetherRefusesKeysAcrossSlots(t *testing.T) {
	a := New(connect.Target{Mode: connect.Cluster}, Options{})
	_, err := a.ReleaseTogether(testCtx(t), []string{"lock:{order-1}:a", "lock:{order-2}:b"}, lockValue, "")
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "different Redis Cluster hash slots") {
		t.Fatalf("%v, want ErrBadRequest naming the slots", err)
	}
}
