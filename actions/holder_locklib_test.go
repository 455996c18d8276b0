package actions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// releaseAsSeen force-releases the holder of key whose value is held's, as the console would:
// read (PeekHolders), name it, compare what was read.
func releaseAsSeen(t *testing.T, a *Admin, key string, held *locklib.Lock) {
	t.Helper()
	l, err := a.PeekHolders(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var mine scanner.SharedHolder
	for _, h := range l.Shared.Live() {
		for _, lease := range h.Leases {
			if lease.Member == held.Value() { // a lease's Lock.Value is its member
				mine = h
			}
		}
	}
	if mine.ID == "" {
		t.Fatalf("no holder of %q among %+v", held.Value(), l.Shared.Holders)
	}
	seen, err := SeenFor(&l, mine)
	if err != nil {
		t.Fatalf("holder of %q: %v (holders %+v)", held.Value(), err, l.Shared.Holders)
	}
	if res, err := a.ReleaseHolder(testCtx(t), key, mine.ID, seen, "test"); err != nil || res.Outcome != Released {
		t.Fatalf("release %s: %q %v", mine.ID, res.Outcome, err)
	}
}

// Against locklib's own read-write lock and semaphore: the released reader's Lock reports
// Lost at its next renewal while the other reader keeps its own; once the last reader is
// released, the queued writer is woken and gets in well before its poll; a released permit
// goes to the queued Acquire at once.
func TestReleaseHolderOfLocklibLeases(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	// Waiters that poll rarely: getting in fast means they were woken.
	lc := locklib.New(c, locklib.WithBackoff(5*time.Second, 5*time.Second))
	defer lc.Close()

	r1, err := lc.ObtainRead(ctx, "lock:doc", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lc.ObtainRead(ctx, "lock:doc", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	writer := make(chan time.Time, 1)
	go func() {
		w, err := lc.ObtainWrite(ctx, "lock:doc", time.Minute)
		if err != nil {
			t.Error(err)
			writer <- time.Time{}
			return
		}
		writer <- time.Now()
		_ = w.Release(context.Background())
	}()
	redistest.Eventually(t, "the writer queued", func() bool { return c.ZCard(ctx, protocol.WaitQueueKey("lock:doc")).Val() == 1 })

	releaseAsSeen(t, a, "lock:doc", r1)
	if err := r1.Refresh(ctx, time.Minute); !errors.Is(err, locklib.ErrNotHeld) {
		t.Fatalf("the released reader's Refresh: %v, want ErrNotHeld", err)
	}
	select {
	case <-r1.Lost():
	default:
		t.Fatal("the released reader's Lock does not report Lost")
	}
	if err := r2.Refresh(ctx, time.Minute); err != nil {
		t.Fatalf("the other reader lost its lock: %v", err)
	}
	select {
	case <-writer:
		t.Fatal("the writer got in beside a reader")
	case <-time.After(200 * time.Millisecond):
	}

	released := time.Now()
	releaseAsSeen(t, a, "lock:doc", r2)
	select {
	case at := <-writer:
		if at.IsZero() {
			t.FailNow()
		}
		t.Logf("the queued writer got the lock %v after the last reader's release", at.Sub(released).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatal("the queued writer was not woken (its poll is 5s)")
	}

	sem := lc.Semaphore("lock:pool", 1)
	p, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	go func() {
		q, err := sem.Acquire(ctx, time.Minute)
		if err == nil {
			err = q.Release(context.Background())
		}
		next <- err
	}()
	redistest.Eventually(t, "the Acquire queued", func() bool { return c.ZCard(ctx, protocol.WaitQueueKey("lock:pool")).Val() == 1 })
	releaseAsSeen(t, a, "lock:pool", p)
	select {
	case err := <-next:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the queued Acquire was not woken")
	}
	if err := p.Refresh(ctx, time.Minute); !errors.Is(err, locklib.ErrNotHeld) {
		t.Fatalf("the released permit's Refresh: %v, want ErrNotHeld", err)
	}
}
