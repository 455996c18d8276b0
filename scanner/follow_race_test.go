package scanner

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestFollowChurnLeavesNoGhosts: keys deleted while the first pass reads them are each heard of
// and re-read; however the pass's batches and the re-reads interleave, once the churn stops
// and the re-reads are in, the census as the stream tells it is what the server holds (a
// pass's record read before a delete must not arrive after the re-read that found it gone).
func TestFollowChurnLeavesNoGhosts(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	keys := loadLocks(t, c, "g", 40000)
	var stop atomic.Bool
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		r := rand.New(rand.NewPCG(3, 4))
		for !stop.Load() {
			pipe := c.Pipeline()
			for range 50 {
				pipe.Del(ctx, keys[r.IntN(len(keys))])
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	census := map[string]bool{}
	apply := func(u Update) {
		if u.Kind != UpdateBatch {
			return
		}
		for _, l := range u.Locks {
			if l.Gone {
				delete(census, l.Key)
			} else {
				census[l.Key] = true
			}
		}
		time.Sleep(200 * time.Microsecond) // a consumer slower than the server
	}
	updates := New(target, Options{Interval: time.Hour}).Watch(ctx)
	for u := range updates {
		apply(u)
		if u.Kind == UpdatePassDone && u.Gen == 1 {
			break
		}
	}
	stop.Store(true)
	<-churned
	applyFor(updates, 3*time.Second, apply)
	ghosts := 0
	for k := range census {
		if c.Exists(ctx, k).Val() == 0 {
			ghosts++
			if ghosts <= 3 {
				t.Errorf("%s is shown but does not exist", k)
			}
		}
	}
	if ghosts > 0 {
		t.Errorf("%d ghosts of %d shown", ghosts, len(census))
	}
}
