package locklib

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockscope/lockscope/internal/redistest"
)

// TestHistoryRW runs a random read-write lock workload (readers, writers, TryObtains,
// re-entrant downgrades, watchdogs, refreshes, contexts that end) from several Clients on
// one redis-server while the connections lose and hold replies and lose requests and the
// server stalls, and
// checks the history with porcupine (rwModel): no write lease overlaps any other owner's
// lease, reads only overlap reads, write tokens increase, and reads report the last write's.
// Then every key must be gone (no lease leaked). LOCKLIB_HISTORY and LOCKLIB_HISTORY_SEED
// as for TestHistory; the default is 5s.
func TestHistoryRW(t *testing.T) {
	dur, seed := historyParams(t, 5*time.Second)
	srv := redistest.Start(t)
	clean := srv.Client()
	faults := redistest.NewFaults(seed)
	faults.SetRandom(historyFaults)
	rng := rand.New(rand.NewPCG(seed, 2))
	keys := []string{"lock:rwhistory:0", "lock:rwhistory:1"}
	h := &rwHistory{t0: time.Now()}
	var clients []*Client
	for i := range 3 {
		c := New(srv.Client(faults.Options), WithNode(fmt.Sprintf("n%d", i)))
		clients = append(clients, c)
	}
	var wg sync.WaitGroup
	stalls := 0
	wg.Go(func() { // server stalls (SIGSTOP) now and then: leases run out, renewals fail
		frng := rand.New(rand.NewPCG(seed, 3))
		for h.now() < dur-time.Second {
			time.Sleep(randDur(frng, 500*time.Millisecond, 1500*time.Millisecond))
			srv.Pause()
			time.Sleep(randDur(frng, 50*time.Millisecond, 400*time.Millisecond))
			srv.Resume()
			stalls++
		}
	})
	for i := range 8 {
		w := &rwWorker{h: h, id: i, c: clients[i%len(clients)], owner: fmt.Sprintf("w%d", i),
			rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), keys: keys}
		wg.Go(func() { w.run(dur) })
	}
	wg.Wait()
	for _, c := range clients {
		_ = c.Close()
	}
	t.Logf("%d server stalls of 50-400ms", stalls)
	h.check(t, seed, faults.Stats())
	for _, key := range keys {
		deadline := time.Now().Add(historyLeakBound)
		for clean.Exists(context.Background(), key).Val() != 0 {
			if time.Now().After(deadline) {
				members, _ := clean.ZRangeWithScores(context.Background(), key, 0, -1).Result()
				t.Errorf("%s still holds %v %v after every holder released (leak)", key, members, historyLeakBound)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

type rwHistory struct {
	t0  time.Time
	mu  sync.Mutex
	ops []*rwOp
}

func (h *rwHistory) now() time.Duration { return time.Since(h.t0) }

// rwOp is one ObtainRead/ObtainWrite (or Try...) and, when it succeeded, its lease's end.
type rwOp struct {
	id          int
	worker      int
	key, owner  string
	write, try  bool
	reentrant   bool
	invoke, ret time.Duration
	err         error
	token       int64
	value       string
	closeAt     time.Duration // min(Release, validity deadline, Lost()) for a held lease
	releaseErr  error
	mu          sync.Mutex
	lostAt      time.Duration
}

func (o *rwOp) String() string {
	mode := "Read"
	if o.write {
		mode = "Write"
	}
	try := ""
	if o.try {
		try = "Try"
	}
	s := fmt.Sprintf("h%d %s %sObtain%s [%v..%v]", o.id, o.owner, try, mode, ms(o.invoke), ms(o.ret))
	if o.err != nil {
		return s + " failed: " + o.err.Error()
	}
	return s + fmt.Sprintf(" token %d %s, valid until %v, release: %s", o.token, o.value, ms(o.closeAt), errText(o.releaseErr))
}

type rwWorker struct {
	h     *rwHistory
	id    int
	c     *Client
	owner string
	rng   *rand.Rand
	keys  []string
}

type rwHeld struct {
	op   *rwOp
	l    *Lock
	stop func()
}

func (w *rwWorker) run(dur time.Duration) {
	for w.h.now() < dur {
		key := w.keys[w.rng.IntN(len(w.keys))]
		switch p := w.rng.Float64(); {
		case p < 0.15: // a downgrade: write, read at once, let the write go, read on
			wl, ok := w.obtain(key, true, true, false)
			if !ok {
				continue
			}
			w.use(wl)
			rl, ok := w.obtain(key, false, true, false)
			w.release(wl)
			if ok {
				w.use(rl)
				w.release(rl)
			}
		default:
			write := w.rng.Float64() < 0.35
			l, ok := w.obtain(key, write, w.rng.Float64() < 0.2, w.rng.Float64() < 0.2)
			if ok {
				w.use(l)
				w.release(l)
			}
		}
		time.Sleep(randDur(w.rng, 0, 30*time.Millisecond))
	}
}

func (w *rwWorker) obtain(key string, write, reentrant, try bool) (rwHeld, bool) {
	op := &rwOp{worker: w.id, key: key, write: write, try: try, reentrant: reentrant}
	w.h.mu.Lock()
	op.id = len(w.h.ops)
	w.h.ops = append(w.h.ops, op)
	w.h.mu.Unlock()
	op.owner = fmt.Sprintf("h%d", op.id)
	opts := []LockOption{WithTrace(op.owner)}
	if reentrant {
		op.owner = w.owner
		opts = append(opts, Reentrant(w.owner))
	}
	if w.rng.Float64() < 0.3 {
		opts = append(opts, WithWatchdog())
	}
	ctx, cancel := context.WithTimeout(context.Background(), randDur(w.rng, 50*time.Millisecond, time.Second))
	defer cancel()
	obtain := map[[2]bool]func(context.Context, string, time.Duration, ...LockOption) (*Lock, error){
		{false, false}: w.c.ObtainRead, {false, true}: w.c.TryObtainRead,
		{true, false}: w.c.ObtainWrite, {true, true}: w.c.TryObtainWrite,
	}[[2]bool{write, try}]
	ttl := randDur(w.rng, 100*time.Millisecond, 400*time.Millisecond)
	op.invoke = w.h.now()
	l, err := obtain(ctx, key, ttl, opts...)
	op.ret = w.h.now()
	if err != nil {
		op.err = err
		return rwHeld{}, false
	}
	op.token, op.value = l.Token(), l.Value()
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-l.Lost():
			op.mu.Lock()
			op.lostAt = w.h.now()
			op.mu.Unlock()
		case <-done:
		}
	}()
	return rwHeld{op: op, l: l, stop: func() { close(done); <-exited }}, true
}

func (w *rwWorker) use(hl rwHeld) {
	time.Sleep(randDur(w.rng, 0, 60*time.Millisecond))
	if w.rng.Float64() < 0.3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = hl.l.Refresh(ctx, randDur(w.rng, 100*time.Millisecond, 400*time.Millisecond))
		cancel()
		time.Sleep(randDur(w.rng, 0, 60*time.Millisecond))
	}
}

func (w *rwWorker) release(hl rwHeld) {
	deadline := lockDeadline(hl.l).Sub(w.h.t0)
	at := w.h.now()
	hl.stop()
	hl.op.releaseErr = hl.l.Release(context.Background())
	c := min(at, deadline-historyExpiryMargin)
	hl.op.mu.Lock()
	if hl.op.lostAt > 0 {
		c = min(c, hl.op.lostAt)
	}
	hl.op.mu.Unlock()
	hl.op.closeAt = c
}

func (h *rwHistory) check(t *testing.T, seed uint64, stats redistest.FaultStats) {
	t.Helper()
	keys := map[string]bool{}
	var held, failed, upgrades int
	for _, o := range h.ops {
		keys[o.key] = true
		switch {
		case o.err == nil:
			held++
		case errors.Is(o.err, ErrUpgrade):
			upgrades++
		default:
			failed++
		}
	}
	t.Logf("%d RW Obtains: %d held, %d not obtained or failed, %d refused upgrades; %d lost replies, %d lost requests, %d held replies",
		len(h.ops), held, failed, upgrades, stats.LostReplies, stats.LostRequests, stats.HeldReplies)
	if upgrades > 0 {
		t.Errorf("%d upgrades refused: the workload never upgrades", upgrades)
	}
	for key := range keys {
		var ops []porcupine.Operation
		for _, o := range h.ops {
			if o.key != key || o.err != nil || o.closeAt <= o.ret {
				continue
			}
			ops = append(ops,
				porcupine.Operation{ClientId: o.worker, Input: rwInput{id: o.id, owner: o.owner, write: o.write, reentrant: o.reentrant},
					Output: o.token, Call: int64(o.invoke), Return: int64(o.ret), Metadata: o.String()},
				porcupine.Operation{ClientId: o.worker, Input: rwInput{close: true, id: o.id},
					Call: int64(o.closeAt), Return: int64(o.closeAt) + 1})
		}
		res, info := porcupine.CheckOperationsVerbose(rwModel(), ops, historyCheckTimeout)
		switch res {
		case porcupine.Unknown:
			t.Logf("%s: porcupine gave no verdict in %v", key, historyCheckTimeout)
		case porcupine.Illegal:
			var b strings.Builder
			fmt.Fprintf(&b, "%s: no linearization of the read-write history (seed %d; LOCKLIB_HISTORY_SEED=%d repeats the random choices)", key, seed, seed)
			if path := writeTemp("locklib-rwhistory-*.html", ""); !strings.Contains(path, " ") {
				if err := porcupine.VisualizePath(rwModel(), info, path); err == nil {
					fmt.Fprintf(&b, "; visualization: %s", path)
				}
			}
			t.Error(b.String())
		}
	}
}
