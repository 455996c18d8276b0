package scanner

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

func TestZZPhases(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	srv := redistest.Start(t)
	c := srv.Client()
	loadParallel(&testing.B{}, c, 1_000_000)
	for range 3 {
		start := time.Now()
		minimalLoop(&testing.B{}, c)
		t.Logf("minimal %v", time.Since(start))
		s := New(standalone(c, srv.Addr), Options{})
		var a assembly
		var mu sync.Mutex
		var first, last time.Time
		var allocAt time.Time
		start = time.Now()
		p := s.newPass(sink{buffer: a.buffer, batch: func(st int, l []Lock) error {
			mu.Lock()
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
			mu.Unlock()
			return a.put(st, l)
		}, expect: func(n int) { allocAt = time.Now(); a.allocate(n) }})
		p.repeatsLater = true
		p.discover, p.fences, p.queues = true, map[string]struct{}{}, map[string]struct{}{}
		_, err := p.run(context.Background())
		runEnd := time.Now()
		locks := a.result(p.claimedKeys())
		resEnd := time.Now()
		locks = dropRepeats(locks)
		dropEnd := time.Now()
		must(t, p.joinCompanions(context.Background(), locks))
		t.Logf("census %v err %v: expect %v first %v last %v run %v result %v drop %v join %v overflow %d", time.Since(start), err,
			allocAt.Sub(start), first.Sub(start), last.Sub(start), runEnd.Sub(start), resEnd.Sub(runEnd), dropEnd.Sub(resEnd), time.Since(dropEnd), len(a.overflow))
	}
}
