package actions

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestOperatorNeverDeletesTheNextHolder races an operator (read the holder, then release
// exactly that value) against an owner that keeps releasing and re-acquiring the key with new
// values. The owner notices when one of its values disappears under it; every such value must
// be one the operator read and released. A blind DEL fails this at once.
func TestOperatorNeverDeletesTheNextHolder(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	const key, iterations = "lock:race", 600
	a := New(target, Options{AuditMaxLen: 100})

	stop := make(chan struct{})
	var (
		mu      sync.Mutex
		stolen  []string // the owner's values that vanished under it
		ownerEr error
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			value := fmt.Sprintf("owner:-:%d:%016x", time.Now().UnixMilli(), i)
			if err := c.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", TTL: time.Minute}).Err(); err != nil {
				ownerEr = fmt.Errorf("owner could not re-acquire: %w", err)
				return
			}
			held, err := redistest.OwnerRelease(ctx, c, key, value)
			if err != nil {
				ownerEr = err
				return
			}
			if !held {
				mu.Lock()
				stolen = append(stolen, value)
				mu.Unlock()
			}
		}
	})

	released := map[string]bool{}
	counts := map[Outcome]int{}
	for range iterations {
		h, err := a.Peek(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Exists {
			counts[AlreadyGone]++
			continue
		}
		res, err := a.Release(ctx, key, h.Value, "race test")
		if err != nil {
			t.Fatal(err)
		}
		counts[res.Outcome]++
		if res.Outcome == Released {
			released[h.Value] = true
		}
	}
	close(stop)
	wg.Wait()
	if ownerEr != nil {
		t.Fatal(ownerEr)
	}

	for _, v := range stolen {
		if !released[v] {
			t.Errorf("the owner's value %q was deleted but the operator never released it", v)
		}
	}
	t.Logf("outcomes %v, owner values deleted by the operator %d", counts, len(stolen))
	if counts[ChangedHands] == 0 || counts[Released] == 0 {
		t.Fatalf("the race was not exercised: %v", counts)
	}
}
