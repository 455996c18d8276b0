package locklib

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
)

// A limit key that does not hold a count of at least 1 (written by hand, or by another
// program) is refused, not read as a number: Lua's tonumber reads "2.5" as 2.5 (a third
// permit while 2 are out leaves 0.5 "free") and "inf" as no limit at all, and overwriting
// "abc" with this Semaphore's size would hide the broken key.
func TestSemaphoreLimitKeyNotACount(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	for _, bad := range []string{"2.5", "inf", "0x2", "1e1", " 2", "0", "-1", "abc", "99999999999999999999"} {
		key := "lock:sem:limit:" + bad
		if err := rdb.Set(ctx, protocol.LimitKey(key), bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		sem := c.Semaphore(key, 2)
		var held []*Lock
		var err error
		for range 3 {
			var l *Lock
			if l, err = sem.TryAcquire(ctx, 10*time.Second); err != nil {
				break
			}
			held = append(held, l)
		}
		if len(held) > 0 || !errors.Is(err, ErrBackend) {
			t.Errorf("limit %q: %d permits granted, then %v; want none and ErrBackend", bad, len(held), err)
		}
		if got, _ := rdb.Get(ctx, protocol.LimitKey(key)).Result(); got != bad {
			t.Errorf("limit %q was overwritten with %q", bad, got)
		}
		if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
			t.Errorf("limit %q: the lease set was written", bad)
		}
		for _, l := range held {
			_ = l.Release(context.Background())
		}
		if err := sem.Resize(ctx, 2); err != nil { // the way out the error names
			t.Fatal(err)
		}
		mustRelease(t, mustAcquire(t, sem, ctx, time.Second))
	}
}
