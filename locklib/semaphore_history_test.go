package locklib

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// TestHistorySemaphore is TestHistory for a lease semaphore: workers of three Clients (the
// same three go-redis settings) Acquire and TryAcquire permits of one semaphore while the
// connections lose, hold and delay requests and replies and the server stalls now and then,
// and a clean Client resizes it between 2 and 4. The history is checked with porcupine
// against semaphoreModel (never more live grants than the limit; every grant's token above
// every token granted before it), and the lease set, sampled all along, for leaks: a member
// whose Acquire failed or whose Release returned must be gone within historyLeakBound.
// LOCKLIB_HISTORY and LOCKLIB_HISTORY_SEED as for TestHistory (default 4s here).
func TestHistorySemaphore(t *testing.T) {
	dur, seed := historyParams(t, 4*time.Second)
	srv := redistest.Start(t)
	faults := redistest.NewFaults(seed)
	faults.SetRandom(historyFaults)
	rng := rand.New(rand.NewPCG(seed, 2))
	const key, initial = "lock:history:sem", 3
	h := &history{t0: time.Now(), instances: 1, quorum: 1, fenced: true, releaseBound: historyReleaseBound,
		samples: map[string][]sampleRound{}}
	var workers []*historyWorker
	var clients []*Client
	for ci := range 3 {
		c := New(srv.Client(historyRedisOptions(ci, faults)...), WithNode(fmt.Sprintf("n%d", ci)))
		clients = append(clients, c)
		for range 4 {
			id := len(workers)
			workers = append(workers, &historyWorker{h: h, id: id, c: c, rng: rand.New(rand.NewPCG(seed, uint64(id)+100))})
		}
	}
	clean, _ := newTestClient(t, srv)
	sem := clean.Semaphore(key, initial)
	var resizes []semResize
	var resizeErr error
	var members []memberSample
	sampling, stop := context.WithCancel(context.Background())
	var background sync.WaitGroup
	background.Go(func() { members = h.sampleMembers(sampling, srv.Client(), key) })
	background.Go(func() { resizes, resizeErr = h.resizeNowAndThen(sampling, sem, rand.New(rand.NewPCG(seed, 3))) })
	var running sync.WaitGroup
	for _, w := range workers {
		running.Go(func() {
			for h.now() < dur {
				w.permitSession(w.c.Semaphore(key, initial))
				time.Sleep(randDur(w.rng, 0, 10*time.Millisecond))
			}
		})
	}
	for h.now() < dur-time.Second { // short stalls: a stalled server answers late, then twice
		time.Sleep(randDur(rng, 500*time.Millisecond, time.Second))
		f := serverFault{start: h.now()}
		h.stall(srv, randDur(rng, 20*time.Millisecond, 300*time.Millisecond))
		f.end = h.now()
		h.faults = append(h.faults, f)
	}
	running.Wait()
	stop()
	background.Wait()
	if resizeErr != nil {
		t.Fatalf("Resize on a clean Client: %v", resizeErr)
	}
	for _, c := range clients {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}

	var violations []string
	ops, verdict, info := h.checkSemaphore(initial, resizes)
	if verdict != porcupine.Ok {
		report := fmt.Sprintf("porcupine: %v (seed %d) over %d operations", verdict, seed, len(ops))
		if f, err := writeVisualization(semaphoreModel(initial), info); err == nil {
			report += "; visualization: " + f
		}
		violations = append(violations, report)
	}
	violations = append(violations, h.permitLeaks(members)...)
	stats := faults.Stats()
	t.Logf("%d Acquire/TryAcquire, %d resizes, %d samples; lost replies %d, lost requests %d, held replies %d; %d stalls",
		len(h.ops), len(resizes), len(members), stats.LostReplies, stats.LostRequests, stats.HeldReplies, len(h.faults))
	for i, v := range violations {
		if i == historyMaxReports {
			t.Errorf("%d more violations", len(violations)-i)
			break
		}
		t.Error(v)
	}
	if len(violations) > 0 {
		t.Errorf("seed %d: LOCKLIB_HISTORY_SEED=%d repeats the random choices", seed, seed)
	}
}

// permitSession takes a permit (Acquire, or now and then TryAcquire), uses it (refreshes,
// TTL reads) and releases it, recording each step.
func (w *historyWorker) permitSession(sem *Semaphore) {
	op := &historyOp{worker: w.id, key: sem.key, watchdog: w.rng.Float64() < 0.3, try: w.rng.Float64() < 0.2,
		ttl: randDur(w.rng, 100*time.Millisecond, 1500*time.Millisecond), timeout: randDur(w.rng, 50*time.Millisecond, time.Second)}
	if w.rng.Float64() < 0.4 { // a ttl beyond the leak bound: a permit left for nobody outlives it, and shows
		op.ttl = randDur(w.rng, 3*time.Second, 4*time.Second)
	}
	w.h.mu.Lock()
	op.id = len(w.h.ops)
	w.h.ops = append(w.h.ops, op)
	w.h.mu.Unlock()
	op.owner = op.trace()
	opts := []LockOption{WithTrace(op.trace())}
	if op.watchdog {
		opts = append(opts, WithWatchdog())
	}
	ctx, cancel := context.WithTimeout(context.Background(), op.timeout)
	defer cancel()
	if w.rng.Float64() < 0.15 {
		op.cancelAt = randDur(w.rng, 0, op.timeout)
		defer time.AfterFunc(op.cancelAt, cancel).Stop()
	}
	acquire := sem.Acquire
	if op.try {
		acquire = sem.TryAcquire
	}
	op.invoke = w.h.now()
	l, err := acquire(ctx, op.ttl, opts...)
	op.ret = w.h.now()
	if err != nil {
		op.err = err
		return
	}
	op.token, op.value = l.Token(), l.Value()
	hl := heldLock{op: op, l: l, stopWatch: w.watchLost(op, l)}
	w.use(hl)
	w.release(hl)
}

// semResize is one Resize of the history.
type semResize struct {
	permits    int
	invoke, at time.Duration
}

// resizeNowAndThen resizes sem between 2 and 4 permits every few hundred ms until ctx ends,
// on a clean Client: every Resize must succeed (else it returns the error).
func (h *history) resizeNowAndThen(ctx context.Context, sem *Semaphore, rng *rand.Rand) ([]semResize, error) {
	var out []semResize
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(randDur(rng, 200*time.Millisecond, 600*time.Millisecond)):
		}
		r := semResize{permits: 2 + rng.IntN(3), invoke: h.now()}
		if err := sem.Resize(context.Background(), r.permits); err != nil {
			return out, err
		}
		r.at = h.now()
		out = append(out, r)
	}
}

// memberSample is the lease set's members, read at one instant.
type memberSample struct {
	call, ret time.Duration
	members   []string
}

// sampleMembers reads the lease set every few ms until ctx ends.
func (h *history) sampleMembers(ctx context.Context, rdb *redis.Client, key string) []memberSample {
	var out []memberSample
	for ctx.Err() == nil {
		s := memberSample{call: h.now()}
		members, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: "(" + fmt.Sprint(time.Now().UnixMilli()), Stop: "+inf", ByScore: true}).Result()
		s.ret = h.now()
		if err == nil {
			s.members = members
			out = append(out, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

// permitLeaks: a live member of the lease set must belong to an Acquire that has not ended
// more than historyLeakBound before (failed, or released; a Release that failed on backend
// errors leaves its member to run out at its TTL, as documented).
func (h *history) permitLeaks(samples []memberSample) []string {
	byTrace := map[string]*historyOp{}
	for _, o := range h.ops {
		byTrace[o.trace()] = o
	}
	var out []string
	reported := map[string]bool{}
	for _, s := range samples {
		for _, m := range s.members {
			lease, ok := protocol.ParseLeaseMember(m)
			o := byTrace[lease.Value.Trace]
			switch {
			case !ok || lease.Mode != protocol.ModePermit || o == nil:
				out = append(out, fmt.Sprintf("at %v the lease set held %q, which no Acquire wrote", ms(s.call), m))
			case reported[m]:
			case o.releaseFailed():
			case s.call > o.end()+historyLeakBound:
				reported[m] = true
				out = append(out, fmt.Sprintf("at %v the lease set held %q, %v after its Acquire ended\n\t%v", ms(s.call), m, ms(s.call-o.end()), o))
			}
		}
	}
	return out
}

// ---- the model: at most limit live grants; tokens increase ----

// semInput is a grant (its output is the token), the end of a grant's validity, or a Resize.
type semInput struct {
	kind    byte // 'g' grant, 'c' close, 'r' resize
	id      int  // of the grant
	permits int  // of the resize
}

// semState is the limit, the grants whose validity is open (ids, sorted, ","-joined) and
// the highest token granted.
type semState struct {
	limit int
	open  string
	top   int64
}

// semaphoreModel: a grant needs fewer open grants than the limit and a token above every
// token granted before it; a Resize sets the limit and takes no grant back.
func semaphoreModel(initial int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return semState{limit: initial} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(semState), input.(semInput)
			switch in.kind {
			case 'r':
				return true, semState{limit: in.permits, open: s.open, top: s.top}
			case 'c':
				open, ok := removeLevel(s.open, in.id)
				return ok, semState{limit: s.limit, open: open, top: s.top}
			}
			token := output.(int64)
			if len(parseLevels(s.open)) >= s.limit || token <= s.top {
				return false, s
			}
			return true, semState{limit: s.limit, open: addLevel(s.open, in.id), top: token}
		},
		DescribeOperation: func(input, output any) string {
			in := input.(semInput)
			switch in.kind {
			case 'r':
				return fmt.Sprintf("Resize(%d)", in.permits)
			case 'c':
				return fmt.Sprintf("close h%d", in.id)
			}
			return fmt.Sprintf("h%d token %d", in.id, output)
		},
		DescribeState: func(state any) string {
			s := state.(semState)
			return fmt.Sprintf("limit %d, open h%s, top token %d", s.limit, strings.ReplaceAll(s.open, ",", " h"), s.top)
		},
	}
}

// checkSemaphore runs porcupine over the grants that returned a permit whose validity was
// still open (as checkLinearizable does for locks) and the Resizes.
func (h *history) checkSemaphore(initial int, resizes []semResize) ([]porcupine.Operation, porcupine.CheckResult, porcupine.LinearizationInfo) {
	var ops []porcupine.Operation
	for _, o := range h.ops {
		if o.err != nil || o.closeAt() <= o.ret {
			continue
		}
		ops = append(ops,
			porcupine.Operation{ClientId: o.worker, Input: semInput{kind: 'g', id: o.id}, Output: o.token,
				Call: int64(o.invoke), Return: int64(o.ret)},
			porcupine.Operation{ClientId: o.worker, Input: semInput{kind: 'c', id: o.id},
				Call: int64(o.closeAt()), Return: int64(o.closeAt()) + 1})
	}
	resizer := slices.MaxFunc(h.ops, func(a, b *historyOp) int { return a.worker - b.worker }).worker + 1
	for _, r := range resizes {
		ops = append(ops, porcupine.Operation{ClientId: resizer, Input: semInput{kind: 'r', permits: r.permits},
			Call: int64(r.invoke), Return: int64(r.at)})
	}
	res, info := porcupine.CheckOperationsVerbose(semaphoreModel(initial), ops, historyCheckTimeout)
	return ops, res, info
}

// writeVisualization writes porcupine's visualization of info to a temporary file.
func writeVisualization(model porcupine.Model, info porcupine.LinearizationInfo) (string, error) {
	name := writeTemp("locklib-history-*.html", "")
	return name, porcupine.VisualizePath(model, info, name)
}
