package actions

import (
	"testing"
	"time"
)

// TestExtendNeverShortensUnlessAllowed (issue 14, point 3): the refusal is made by the script,
// against the TTL the key has when it runs, for a string and a hash lock; the explicit
// ExtendAllowingShorten sets the shorter TTL.
func TestExtendNeverShortensUnlessAllowed(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "tester"})
	mustSet(t, c, "lock:long", "v1", 10*time.Minute)
	mustSet(t, c, "lock:forever", "v2", 0)
	if err := c.HSet(ctx, "lock:hash", "id:1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.PExpire(ctx, "lock:hash", 10*time.Minute)

	cases := []struct{ key, expect string }{{"lock:long", "v1"}, {"lock:forever", "v2"}, {"lock:hash", CanonicalHash(map[string]string{"id:1": "1"})}}
	for _, tc := range cases {
		before := c.PTTL(ctx, tc.key).Val()
		res, err := a.Extend(ctx, tc.key, tc.expect, 30*time.Second, "test")
		if err != nil || res.Outcome != WouldShorten || (res.TTLLeft < 0) != (before < 0) || res.TTLLeft > before {
			t.Fatalf("%s: Extend to 30s = %v (left %v), %v; want %s", tc.key, res.Outcome, res.TTLLeft, err, WouldShorten)
		}
		if after := c.PTTL(ctx, tc.key).Val(); (after < 0) != (before < 0) || after >= 0 && after < 9*time.Minute {
			t.Fatalf("%s: a refused Extend changed the TTL from %v to %v", tc.key, before, after)
		}
		if res, err := a.ExtendAllowingShorten(ctx, tc.key, tc.expect, 30*time.Second, "test"); err != nil || res.Outcome != Extended {
			t.Fatalf("%s: ExtendAllowingShorten = %v, %v", tc.key, res.Outcome, err)
		}
		if after := c.PTTL(ctx, tc.key).Val(); after <= 0 || after > 30*time.Second {
			t.Fatalf("%s: TTL %v after ExtendAllowingShorten to 30s", tc.key, after)
		}
	}
	if res, err := a.Extend(ctx, "lock:long", "v1", time.Minute, "test"); err != nil || res.Outcome != Extended {
		t.Fatalf("a longer TTL: %v, %v", res.Outcome, err)
	}
}
