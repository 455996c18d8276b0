package locklib

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestHistory runs random lock workloads (plain, re-entrant, and multi-key locks on
// overlapping sets of the same keys) from several Clients against one redis-server
// while the network loses and holds replies and the server stalls and restarts, records
// what every Obtain, Refresh and Release saw, samples the keys with a clean client, and
// checks the history afterwards (history_check_test.go): mutual exclusion and fencing
// order with porcupine, each Lock's validity against the key's real content, leaks, and
// Release's time bound. A failure prints the seed, the first violations of each check with
// a diagnosis, the file with all of them, and porcupine's visualization.
//
// LOCKLIB_HISTORY sets the duration (default 25s, skipped with -short unless set; `make soak` runs 10m),
// LOCKLIB_HISTORY_SEED the seed of every random choice (logged; timing still varies).
func TestHistory(t *testing.T) {
	dur, seed := historyParams(t, 25*time.Second)
	runHistory(t, dur, seed, historySetup{
		instances: 1,
		keys:      []string{"lock:history:0", "lock:history:1", "lock:history:2"},
		faults:    []redistest.RandomFaults{historyFaults},
		trySweeps: 0.15,
		multi:     0.2,
		multiKeys: []string{"lock:history:m0", "lock:history:m1", historyTryKey},
		newClient: func(_ *testing.T, rdbs []redis.UniversalClient, node string) *Client {
			return New(rdbs[0], WithNode(node))
		},
		fenced:       true,
		releaseBound: historyReleaseBound,
	})
}

// historyInstanceTimeout is TestHistoryRedlock's per-instance timeout. The default, 5 ms +
// ttl/20 (10-20 ms for the ttls up to 300 ms here, 250 ms for Release and the undo of an
// attempt), is shorter than go-redis's back-off before it sends a request again after a lost
// reply (8 ms and up), plus a new connection, under -race on a loaded 2-core machine: most
// re-sent SETs and scripts then answer after their attempt was decided, and the paths that
// must treat a request run twice as once are rarely taken (a SET NX sent twice was caught
// in 1 of 3 40 s runs with the default, 3 of 3 with 150 ms). With 150 ms an instance that
// answers at all nearly always answers in time, and a stalled one still costs an operation
// little. It is also Release's bound: a Release waits for each instance at most this long.
// (The validity, not this timeout, fails an attempt on a 100 ms ttl whose quorum answered
// late.)
const historyInstanceTimeout = 150 * time.Millisecond

// TestHistoryRedlock is TestHistory for Redlock (NewRedlock over three redis-servers): the
// same workload, faults on the connections to every instance, and stalls and restarts of
// one instance at a time (a minority). Every key is read on every instance in sample rounds,
// and the checks are the Redlock forms of TestHistory's: porcupine without fencing tokens
// (Redlock has none), validity against a majority of the instances, leaks of values held
// on a majority (a stale key on a minority until its TTL is documented, docs/redlock.md),
// Release's bound (one instance timeout), results. Same variables as TestHistory; the
// default duration is 15s (skipped with -short unless LOCKLIB_HISTORY is set).
func TestHistoryRedlock(t *testing.T) {
	dur, seed := historyParams(t, 15*time.Second)
	// A plain attempt whose SET NX was sent again after a lost reply on two of the three
	// instances finds its own value on a majority, and must count it as taken. That takes
	// two lost replies (p²) in one attempt that finds the key free, which the TryObtain
	// sweeps mostly do: at TestHistory's rates a 40 s run met it about once, so SETs lose
	// more replies and sweeps come twice as often.
	sets := historyFaults
	sets.Match, sets.LostReply = isSet, 0.4
	runHistory(t, dur, seed, historySetup{
		instances: 3,
		keys:      []string{"lock:history:0", "lock:history:1"},
		faults:    []redistest.RandomFaults{sets, historyFaults},
		trySweeps: 0.3,
		newClient: func(t *testing.T, rdbs []redis.UniversalClient, node string) *Client {
			// Scripts loaded and connections open before the history starts: the first
			// attempts would otherwise time out on dialing and NOSCRIPT.
			(&redlockFixture{clients: rdbs}).warmUp(t)
			c, err := NewRedlock(rdbs, WithNode(node), WithInstanceTimeout(historyInstanceTimeout))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		releaseBound: historyInstanceTimeout,
	})
}

// historyFaults are the connection faults of the histories: lost and held replies (go-redis
// sends a request again after a lost one), lost requests, latency.
var historyFaults = redistest.RandomFaults{LostReply: 0.05, LostRequest: 0.01, HeldReply: 0.06,
	HoldMax: 250 * time.Millisecond, Delay: 2 * time.Millisecond}

func isSet(cmd []string) bool { return cmd[0] == "set" }

// historySetup is what TestHistory and TestHistoryRedlock do differently.
type historySetup struct {
	instances int                      // redis-servers the locks live on: 1, or Redlock's N
	keys      []string                 // for sessions; TryObtain sweeps also use historyTryKey
	faults    []redistest.RandomFaults // redistest.Faults.SetRandom
	trySweeps float64                  // the share of a worker's rounds that are TryObtain sweeps
	multi     float64                  // the share of sessions that take several keys at once (ObtainMulti)
	// multiKeys are the keys of multi-key sessions. They have no FIFO queue (only multi-key
	// locks and TryObtain sweeps use them): a multi-key lock never jumps one, and the
	// session keys nearly always have one, so it would almost never be taken there.
	multiKeys []string
	// newClient makes a lock Client over one go-redis client per instance.
	newClient    func(t *testing.T, rdbs []redis.UniversalClient, node string) *Client
	fenced       bool          // the Locks carry fencing tokens
	releaseBound time.Duration // Release's documented bound
}

// historyTryKey is used by TryObtain sweeps and multi-key sessions only, so it has no
// waiters (TryObtain and ObtainMulti never jump a wait queue, and the shared keys nearly
// always have one).
const historyTryKey = "lock:history:try"

// runHistory starts the servers, runs the workload, the samplers and the server faults for
// dur, and checks the history.
func runHistory(t *testing.T, dur time.Duration, seed uint64, setup historySetup) {
	t.Helper()
	// With AOF and fsync on every write a restart keeps the locks; without it a restart
	// loses them all, which no lock library can prevent.
	servers := redistest.StartN(t, setup.instances, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	var clean []*redis.Client
	for _, srv := range servers {
		if srv.Port == 6379 {
			t.Fatal("redistest picked port 6379, Redis's default: refusing to run faults against it")
		}
		c := srv.Client()
		checkRestartKeepsKeys(t, srv, c)
		clean = append(clean, c)
	}

	rng := rand.New(rand.NewPCG(seed, 1))
	faults := redistest.NewFaults(seed)
	faults.SetRandom(setup.faults...)

	keys := setup.keys
	tryKeys := append(slices.Clone(keys), historyTryKey)
	for _, key := range setup.multiKeys {
		if !slices.Contains(tryKeys, key) {
			tryKeys = append(tryKeys, key)
		}
	}
	h := &history{t0: time.Now(), instances: len(servers), quorum: len(servers)/2 + 1, fenced: setup.fenced,
		releaseBound: setup.releaseBound, samples: map[string][]sampleRound{}}
	const clients, workersPerClient = 3, 4
	var lockClients []*Client
	var workers []*historyWorker
	for ci := range clients {
		opts := historyRedisOptions(ci, faults)
		var rdbs []redis.UniversalClient
		for _, srv := range servers {
			rdbs = append(rdbs, srv.Client(opts...))
		}
		c := setup.newClient(t, rdbs, "n"+strconv.Itoa(ci))
		lockClients = append(lockClients, c)
		for range workersPerClient {
			id := len(workers)
			workers = append(workers, &historyWorker{h: h, id: id, c: c, owner: fmt.Sprintf("c%dw%d", ci, id),
				keys: keys, tryKeys: tryKeys, trySweeps: setup.trySweeps, multi: setup.multi, multiKeys: setup.multiKeys,
				rng: rand.New(rand.NewPCG(seed, uint64(id)+100))})
		}
	}

	sampling, stopSampling := context.WithCancel(context.Background())
	var samplers sync.WaitGroup
	for _, key := range tryKeys {
		samplers.Add(1)
		go func() {
			defer samplers.Done()
			h.sample(sampling, clean, key)
		}()
	}
	var running sync.WaitGroup
	for _, w := range workers {
		running.Add(1)
		go func() {
			defer running.Done()
			w.run(dur)
		}()
	}

	// On the test goroutine: redistest fails tests with Fatal. The probe Client has go-redis's
	// default options, like most users.
	h.injectServerFaults(servers, lockClients[clients-1], rng, dur)
	running.Wait()
	// A value left behind near the end needs the leak bound to pass before it shows.
	time.Sleep(historyLeakBound + 500*time.Millisecond)
	stopSampling()
	samplers.Wait()
	for _, c := range lockClients {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}

	h.check(t, seed, faults.Stats())
}

// historyRedisOptions are the go-redis options of a history's Client ci (of 3), each with
// faults installed.
func historyRedisOptions(ci int, faults *redistest.Faults) []func(*redis.Options) {
	opts := []func(*redis.Options){faults.Options}
	switch ci {
	case 0:
		// A common setting: the socket wait ends with the context, so a call is often cut
		// short after the server ran it.
		opts = append(opts, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	case 1:
		// No retries: a lost reply or request is a backend error, so attempts fail with
		// their outcome unknown, and their Obtain cleans up after them.
		opts = append(opts, func(o *redis.Options) { o.MaxRetries = -1 })
	}
	// The last Client keeps go-redis's defaults, like most users.
	return opts
}

func historyParams(t *testing.T, dur time.Duration) (time.Duration, uint64) {
	t.Helper()
	if testing.Short() && os.Getenv("LOCKLIB_HISTORY") == "" {
		t.Skip("a history needs its length to find anything: make test runs it, make soak runs it long")
	}
	if s := os.Getenv("LOCKLIB_HISTORY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("LOCKLIB_HISTORY=%q: want a positive Go duration", s)
		}
		dur = d
	}
	seed := rand.Uint64()
	if s := os.Getenv("LOCKLIB_HISTORY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LOCKLIB_HISTORY_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (repeat the random choices with LOCKLIB_HISTORY_SEED=%d), duration %v", seed, seed, dur)
	return dur, seed
}

// checkRestartKeepsKeys makes sure the server's persistence works: the checks count on
// locks surviving a restart.
func checkRestartKeepsKeys(t *testing.T, srv *redistest.Server, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	const probe = "history:aof-probe"
	if err := rdb.Set(ctx, probe, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if v, err := rdb.Get(ctx, probe).Result(); err != nil || v != "1" {
		t.Fatalf("a key did not survive a restart with AOF on (%q, %v): restarts would lose locks", v, err)
	}
	rdb.Del(ctx, probe)
}

// lockDeadline is the Lock's local validity deadline. It is the only place that reads the
// Lock's internals: change it if they change.
func lockDeadline(l *Lock) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// history is what the run recorded. Times are monotonic durations since t0.
type history struct {
	t0           time.Time
	instances    int // redis-servers: 1, or Redlock's N
	quorum       int // instances that hold a lock: 1, or N/2+1
	fenced       bool
	releaseBound time.Duration

	mu      sync.Mutex
	ops     []*historyOp
	samples map[string][]sampleRound
	faults  []serverFault
}

func (h *history) now() time.Duration { return time.Since(h.t0) }

// historyOp is one Obtain or TryObtain and, when it succeeded, what became of its Lock.
type historyOp struct {
	id        int
	worker    int // porcupine's client id
	key       string
	keys      []string // every key of a multi-key lock (key is the first); nil for the others
	owner     string   // the worker's owner id for a re-entrant lock; the trace for a plain one
	try       bool
	reentrant bool
	watchdog  bool
	level     int // 2 when obtained while the worker held the key already
	ttl       time.Duration
	timeout   time.Duration
	cancelAt  time.Duration // > 0: the context was cancelled this long after the call
	invoke    time.Duration
	ret       time.Duration
	err       error
	token     int64
	value     string

	// Set once the Lock is released.
	releaseAt  time.Duration // Release invoked
	releaseDur time.Duration
	releaseErr error
	deadline   time.Duration // lockDeadline read just before Release

	mu        sync.Mutex // guards what other goroutines write: lostAt and refreshes
	lost      bool
	lostAt    time.Duration // when Lost() was seen closed
	lostErr   error         // Err() just before Release
	refreshes []refreshCall
}

// refreshCall is one Refresh of a Lock, for the reports.
type refreshCall struct {
	ttl        time.Duration
	start, end time.Duration
	err        error
	deadline   time.Duration // the Lock's deadline after it
}

func (r refreshCall) String() string {
	return fmt.Sprintf("Refresh(%v) %v..%v: %s, deadline now %v", ms(r.ttl), ms(r.start), ms(r.end), errText(r.err), ms(r.deadline))
}

func (o *historyOp) trace() string { return "h" + strconv.Itoa(o.id) }

// lockedKeys are the keys the operation takes: a multi-key lock's, or its one key.
func (o *historyOp) lockedKeys() []string {
	if o.keys != nil {
		return o.keys
	}
	return []string{o.key}
}

func (o *historyOp) holds(key string) bool { return slices.Contains(o.lockedKeys(), key) }

// sample is one GET and PTTL of a key on one instance by a clean client.
type sample struct {
	instance  int
	call, ret time.Duration
	value     string // "" when the key does not exist
	pttl      time.Duration
	at        time.Time // the server's clock when it read the key (TIME, same transaction)
}

// sampleRound is one key read on every instance at once: the reads that answered, by
// instance (a server down or stalled past the round has none).
type sampleRound []sample

func (r sampleRound) call() time.Duration {
	return slices.MinFunc(r, func(a, b sample) int { return cmp.Compare(a.call, b.call) }).call
}

func (r sampleRound) ret() time.Duration {
	return slices.MaxFunc(r, func(a, b sample) int { return cmp.Compare(a.ret, b.ret) }).ret
}

// spread is how far apart the instances ran the reads, by their own clocks: they all run on
// this machine, so the clocks are one.
func (r sampleRound) spread() time.Duration {
	first := slices.MinFunc(r, func(a, b sample) int { return a.at.Compare(b.at) }).at
	last := slices.MaxFunc(r, func(a, b sample) int { return a.at.Compare(b.at) }).at
	return last.Sub(first)
}

// serverFault is a window in which one server was stalled (SIGSTOP) or down (restart).
type serverFault struct {
	instance   int
	server     string // the instance's name in reports; "" when there is one server
	start, end time.Duration
	restart    bool
}

// excuses tells whether the fault may have kept a value in place past the leak bound: a
// stall long enough to stop clean-ups, or a restart (a write the client never heard back
// about may be lost with it).
func (f serverFault) excuses() bool { return f.restart || f.end-f.start > time.Second }

func (f serverFault) String() string {
	if f.restart {
		return fmt.Sprintf("%srestart %v..%v", f.server, ms(f.start), ms(f.end))
	}
	return fmt.Sprintf("%sstall %v..%v (%v)", f.server, ms(f.start), ms(f.end), ms(f.end-f.start))
}

// instanceName names instance i in reports: "" when there is one server.
func (h *history) instanceName(i int) string {
	if h.instances == 1 {
		return ""
	}
	return "r" + strconv.Itoa(i) + " "
}

// injectServerFaults stalls a server now and then and rarely restarts it, until dur; one at
// a time, so with Redlock always a minority. Stalls are mostly short: one over a second
// excuses the leaks around it. About every 20 s one stall is long, past Release's 2 s bound,
// and a probe Lock is released during it.
func (h *history) injectServerFaults(servers []*redistest.Server, probe *Client, rng *rand.Rand, dur time.Duration) {
	nextLong := randDur(rng, 3*time.Second, 15*time.Second)
	for {
		wait := randDur(rng, time.Second, 4*time.Second)
		if h.now()+wait >= dur {
			time.Sleep(max(dur-h.now(), 0))
			return
		}
		time.Sleep(wait)
		i := 0
		if len(servers) > 1 { // no draw for one server: its seeds keep their choices
			i = rng.IntN(len(servers))
		}
		srv := servers[i]
		f := serverFault{instance: i, server: h.instanceName(i), start: h.now()}
		switch p := rng.Float64(); {
		case p < 0.1:
			f.restart = true
			srv.Kill()
			time.Sleep(randDur(rng, 20*time.Millisecond, 300*time.Millisecond))
			srv.Restart()
		case f.start >= nextLong:
			nextLong = f.start + randDur(rng, 15*time.Second, 25*time.Second)
			h.stallReleasing(srv, probe, randDur(rng, 3500*time.Millisecond, 4500*time.Millisecond))
		default:
			u := rng.Float64()
			h.stall(srv, 50*time.Millisecond+time.Duration(u*u*float64(1450*time.Millisecond)))
		}
		f.end = h.now()
		h.mu.Lock()
		h.faults = append(h.faults, f)
		h.mu.Unlock()
	}
}

func (h *history) stall(srv *redistest.Server, d time.Duration) {
	srv.Pause()
	time.Sleep(d)
	srv.Resume()
}

// stallReleasing stalls srv for d while a Lock taken just before is released: Release
// promises to return within its bound whatever the server does (2 s; Redlock's, with a
// minority stalled, one instance timeout). The Lock is recorded on a key nobody samples, so
// only the Release bound checks it.
func (h *history) stallReleasing(srv *redistest.Server, c *Client, d time.Duration) {
	op := &historyOp{worker: -1, key: "lock:history:probe", ttl: 10 * time.Second, timeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), op.timeout)
	op.invoke = h.now()
	l, err := c.Obtain(ctx, op.key, op.ttl, WithTrace("probe"))
	op.ret = h.now()
	cancel()
	if err != nil { // the faults got in the way: no probe this time
		h.stall(srv, d)
		return
	}
	op.owner, op.token, op.value = "probe", l.Token(), l.Value()
	srv.Pause()
	released := make(chan struct{})
	go func() {
		defer close(released)
		op.deadline, op.releaseAt = lockDeadline(l).Sub(h.t0), h.now()
		op.releaseErr = l.Release(context.Background())
		op.releaseDur = h.now() - op.releaseAt
	}()
	time.Sleep(d)
	srv.Resume()
	<-released
	h.mu.Lock()
	op.id = len(h.ops)
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// sample reads key on every instance (rdbs, by instance) at once every 10-20 ms until ctx
// ends. Failed reads (server down) are left out of their round.
func (h *history) sample(ctx context.Context, rdbs []*redis.Client, key string) {
	var out []sampleRound
	defer func() {
		h.mu.Lock()
		h.samples[key] = out
		h.mu.Unlock()
	}()
	reads, ok := make([]sample, len(rdbs)), make([]bool, len(rdbs))
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for i, rdb := range rdbs {
			wg.Go(func() { reads[i], ok[i] = h.read(ctx, rdb, i, key) })
		}
		wg.Wait()
		var round sampleRound
		for i := range reads {
			if ok[i] {
				round = append(round, reads[i])
			}
		}
		if len(round) > 0 {
			out = append(out, round)
		}
		time.Sleep(10*time.Millisecond + rand.N(10*time.Millisecond))
	}
}

// read is one GET and PTTL of key on instance i, in a transaction with TIME: the server runs
// the three at one instant, so the read's time on the server's clock is known.
func (h *history) read(ctx context.Context, rdb *redis.Client, i int, key string) (sample, bool) {
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	var clock *redis.TimeCmd
	call := h.now()
	_, _ = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get, pttl, clock = p.Get(ctx, key), p.PTTL(ctx, key), p.Time(ctx)
		return nil
	})
	ret := h.now()
	if err := get.Err(); err != nil && !errors.Is(err, redis.Nil) || clock.Err() != nil {
		return sample{}, false
	}
	return sample{instance: i, call: call, ret: ret, value: get.Val(), pttl: pttl.Val(), at: clock.Val()}, true
}

// historyWorker runs random lock sessions with one Client as one owner.
type historyWorker struct {
	h         *history
	id        int
	c         *Client
	owner     string
	keys      []string // for sessions
	tryKeys   []string // for TryObtain sweeps
	trySweeps float64  // the share of rounds that are sweeps
	multi     float64  // the share of sessions that are multi-key
	multiKeys []string // for multi-key sessions
	rng       *rand.Rand
}

// heldLock is a Lock with its record and the goroutine that watches Lost().
type heldLock struct {
	op        *historyOp
	l         *Lock
	stopWatch func()
}

func (w *historyWorker) run(dur time.Duration) {
	for w.h.now() < dur {
		if w.rng.Float64() < w.trySweeps {
			w.trySweep()
		} else if w.multi > 0 && w.rng.Float64() < w.multi {
			w.multiSession()
		} else {
			w.session(w.keys[w.rng.IntN(len(w.keys))])
		}
		time.Sleep(randDur(w.rng, 0, 20*time.Millisecond))
	}
}

// trySweep takes the first free key with TryObtain, plain locks only: a TryObtain that
// finds its key free and runs twice is what leaves a value behind.
func (w *historyWorker) trySweep() {
	for _, i := range w.rng.Perm(len(w.tryKeys)) {
		if l, ok := w.obtain(w.tryKeys[i], false, 1, 0, w.rng.Float64() < 0.3, true); ok {
			w.use(l)
			w.release(l)
			return
		}
	}
}

// multiSession takes two or more of the multi-key sessions' keys at once (ObtainMulti,
// sometimes TryObtainMulti), plain, among other sets and TryObtain sweeps on the same keys.
func (w *historyWorker) multiSession() {
	keys := w.rng.Perm(len(w.multiKeys))[:2+w.rng.IntN(len(w.multiKeys)-1)]
	set := make([]string, len(keys))
	for i, k := range keys {
		set[i] = w.multiKeys[k]
	}
	if l, ok := w.obtainSet(set, false, 1, 0, w.rng.Float64() < 0.3, w.rng.Float64() < 0.2); ok {
		w.use(l)
		w.release(l)
	}
}

// session takes key once, plain or re-entrant. A re-entrant outer level is often entered
// again with a short ttl and a watchdog or refreshes: the inner level must never cut the
// key's life below what the outer level believes.
func (w *historyWorker) session(key string) {
	if w.rng.Float64() < 0.45 {
		l, ok := w.obtain(key, false, 1, 0, w.rng.Float64() < 0.3, w.rng.Float64() < 0.25)
		if ok {
			w.use(l)
			w.release(l)
		}
		return
	}
	outer, ok := w.obtain(key, true, 1, randDur(w.rng, time.Second, 3*time.Second), w.rng.Float64() < 0.2, w.rng.Float64() < 0.25)
	if !ok {
		return
	}
	w.use(outer)
	if w.rng.Float64() < 0.2 {
		w.release(outer)
		return
	}
	inner, ok := w.obtain(key, true, 2, randDur(w.rng, 100*time.Millisecond, 300*time.Millisecond), w.rng.Float64() < 0.6, w.rng.Float64() < 0.25)
	if !ok {
		w.use(outer)
		w.release(outer)
		return
	}
	w.use(inner)
	if w.rng.Float64() < 0.8 {
		w.release(inner)
		w.use(outer)
		w.release(outer)
	} else {
		w.release(outer)
		w.use(inner)
		w.release(inner)
	}
}

// plainTTL mixes short ttls (expiry, watchdog churn) with ttls longer than the leak bound
// (a value left behind outlives it, so the leak check can see it). A TryObtain gets mostly
// long ones: one that runs twice leaves its value behind.
func (w *historyWorker) plainTTL(try bool) time.Duration {
	if try && w.rng.Float64() < 0.5 {
		return randDur(w.rng, 3*time.Second, 4*time.Second)
	}
	switch p := w.rng.Float64(); {
	case p < 0.3:
		return randDur(w.rng, 100*time.Millisecond, 300*time.Millisecond)
	case p < 0.6:
		return randDur(w.rng, 300*time.Millisecond, 1500*time.Millisecond)
	default:
		return randDur(w.rng, 2500*time.Millisecond, 4*time.Second)
	}
}

// obtain makes one Obtain or TryObtain; ttl 0 draws a plain lock's ttl.
func (w *historyWorker) obtain(key string, reentrant bool, level int, ttl time.Duration, watchdog, try bool) (heldLock, bool) {
	return w.obtainSet([]string{key}, reentrant, level, ttl, watchdog, try)
}

// obtainSet is obtain for one key, or an ObtainMulti (TryObtainMulti) for several.
func (w *historyWorker) obtainSet(keys []string, reentrant bool, level int, ttl time.Duration, watchdog, try bool) (heldLock, bool) {
	op := &historyOp{worker: w.id, key: keys[0], reentrant: reentrant, watchdog: watchdog,
		level: level, ttl: ttl, try: try, timeout: randDur(w.rng, 50*time.Millisecond, 2*time.Second)}
	if ttl == 0 {
		op.ttl = w.plainTTL(op.try)
	}
	w.h.mu.Lock()
	op.id = len(w.h.ops)
	w.h.ops = append(w.h.ops, op)
	w.h.mu.Unlock()
	op.owner = op.trace()
	opts := []LockOption{WithTrace(op.trace())}
	if reentrant {
		op.owner = w.owner
		opts = append(opts, Reentrant(w.owner))
	}
	if watchdog {
		opts = append(opts, WithWatchdog())
	}
	ctx, cancel := context.WithTimeout(context.Background(), op.timeout)
	defer cancel()
	if w.rng.Float64() < 0.15 {
		op.cancelAt = randDur(w.rng, 0, op.timeout)
		defer time.AfterFunc(op.cancelAt, cancel).Stop()
	}
	obtain := w.c.Obtain
	if op.try {
		obtain = w.c.TryObtain
	}
	if len(keys) > 1 {
		op.keys = keys
		obtain = func(ctx context.Context, _ string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
			if op.try {
				return w.c.TryObtainMulti(ctx, keys, ttl, opts...)
			}
			return w.c.ObtainMulti(ctx, keys, ttl, opts...)
		}
	}
	op.invoke = w.h.now()
	l, err := obtain(ctx, op.key, op.ttl, opts...)
	op.ret = w.h.now()
	if err != nil {
		op.err = err
		return heldLock{}, false
	}
	op.token, op.value = l.Token(), l.Value()
	return heldLock{op: op, l: l, stopWatch: w.watchLost(op, l)}, true
}

// watchLost records when Lost() closes: the holder stops relying on the lock then, even if
// the deadline it had is later (a refused renewal does not move the deadline).
func (w *historyWorker) watchLost(op *historyOp, l *Lock) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-l.Lost():
			op.mu.Lock()
			op.lost, op.lostAt = true, w.h.now()
			op.mu.Unlock()
		case <-done:
		}
	}()
	return func() { close(done); <-exited }
}

// use holds the lock for a while and sometimes refreshes it, once or twice at the same time.
func (w *historyWorker) use(hl heldLock) {
	time.Sleep(randDur(w.rng, 0, 250*time.Millisecond))
	for n := w.rng.IntN(3); n > 0; n-- {
		switch p := w.rng.Float64(); {
		case p < 0.4:
			w.refresh(hl, w.refreshTTL())
		case p < 0.8:
			// Long first, short a moment later: the server usually runs them in that order,
			// and a held reply of the long one then arrives last.
			long, short := randDur(w.rng, time.Second, 3*time.Second), randDur(w.rng, 100*time.Millisecond, 300*time.Millisecond)
			gap := randDur(w.rng, 0, 2*time.Millisecond)
			var both sync.WaitGroup
			both.Add(1)
			go func() {
				defer both.Done()
				w.refresh(hl, long)
			}()
			time.Sleep(gap)
			w.refresh(hl, short)
			both.Wait()
		default:
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = hl.l.TTL(ctx)
			cancel()
		}
		time.Sleep(randDur(w.rng, 50*time.Millisecond, 400*time.Millisecond))
	}
}

func (w *historyWorker) refreshTTL() time.Duration {
	if w.rng.Float64() < 0.5 {
		return randDur(w.rng, 100*time.Millisecond, 300*time.Millisecond)
	}
	return randDur(w.rng, time.Second, 3*time.Second)
}

func (w *historyWorker) refresh(hl heldLock, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := refreshCall{ttl: ttl, start: w.h.now()}
	r.err = hl.l.Refresh(ctx, ttl)
	r.end, r.deadline = w.h.now(), lockDeadline(hl.l).Sub(w.h.t0)
	hl.op.mu.Lock()
	hl.op.refreshes = append(hl.op.refreshes, r)
	hl.op.mu.Unlock()
}

func (w *historyWorker) release(hl heldLock) {
	deadline := lockDeadline(hl.l).Sub(w.h.t0)
	at := w.h.now()
	hl.stopWatch()
	ctx := context.Background()
	if w.rng.Float64() < 0.1 { // Release must work with a context that has already ended
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	lost := hl.l.Err()
	err := hl.l.Release(ctx)
	op := hl.op
	op.deadline, op.releaseAt, op.releaseDur, op.releaseErr, op.lostErr = deadline, at, w.h.now()-at, err, lost
}

func randDur(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
