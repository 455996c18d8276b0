package scanner

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
)

// TestSentinelCensusThroughFailover: a census through Sentinel's failover client while the
// master is failed over in the middle of its walk (300,000 other keys and COUNT 5 make the
// walk's SCAN take seconds). A SCAN cursor is only good on the server that gave it, and the failover
// client sends the next SCAN to the new master without an error: a complete census must
// still list every lock.
func TestSentinelCensusThroughFailover(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 3)
	ctx := testCtx(t)
	target, _, err := connect.Open(ctx, connect.Config{URLs: []string{"redis+sentinel://" + strings.Join(r.SentinelAddrs, ",") + "/" + redistest.MasterName}})
	must(t, err)
	defer target.Close()
	keys := loadLocks(t, target.Clients[0], "f", 3000)
	for chunk := range 30 {
		p := target.Clients[0].Pipeline()
		for i := range 10000 {
			p.Set(ctx, fmt.Sprintf("other:%d:%d", chunk, i), "x", 0)
		}
		_, err := p.Exec(ctx)
		must(t, err)
	}
	must(t, r.WaitSynced(20*time.Second))
	s := New(target, Options{Count: 5})
	seen := map[string]bool{}
	var failed chan error
	var failedOver atomic.Bool
	start := time.Now()
	c, err := s.CensusEach(ctx, func(locks []Lock) error {
		if failed == nil {
			failed = make(chan error, 1)
			go func() {
				_, err := r.Failover(20 * time.Second)
				failedOver.Store(true)
				failed <- err
			}()
		}
		for _, l := range locks {
			seen[l.Key] = true
		}
		return nil
	})
	must(t, err)
	during := failedOver.Load()
	must(t, <-failed)
	if !during {
		t.Fatal("the census ended before the failover: it tested nothing (a longer walk: more keys)")
	}
	t.Logf("census of %v: %d of %d locks, missing %v", time.Since(start).Round(time.Millisecond), len(seen), len(keys), c.Missing)
	if len(c.Missing) == 0 && len(seen) != len(keys) {
		t.Fatalf("a complete census saw %d of %d locks", len(seen), len(keys))
	}
}
