package scanner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
)

// Watch takes a census and then follows it: it streams what the first pass finds at full
// speed, then keeps the records fresh by following changes instead of reading everything
// again. Batches arrive as they are read, so the first rows come within one SCAN round trip
// and one pipeline of reads, whatever the key count. Each pass ends with an UpdatePassDone
// for its Gen: keys not seen in that pass are gone.
//
// After the first pass, every server is followed (see Mechanism): a key it names is re-read
// at once and sent as a one-lock UpdateBatch (Gone set when it was deleted). Passes go on in
// the background as a safety net, paced to Options.ScanBudget of each server's time, each
// Options.Interval after the last; a subscriber that reconnects restarts the pass at once,
// since changes were not heard meanwhile. UpdateFollowing says how the servers are followed
// and how far the re-scan is. The channel closes when ctx ends; stop reading only after
// cancelling. Follow gives the same stream with a way to name the keys on screen.
func (s *Scanner) Watch(ctx context.Context) <-chan Update {
	return s.Follow(ctx).Updates()
}

// Follower is a running Watch: its stream, and the keys its consumer shows now, which it
// re-reads about once a second.
type Follower struct {
	updates chan Update
	mu      sync.Mutex
	focus   []string
}

// Follow starts a Watch (see Watch) whose consumer can name the keys it shows (Focus).
func (s *Scanner) Follow(ctx context.Context) *Follower {
	f := &Follower{updates: make(chan Update, 64)}
	go s.watch(ctx, f)
	return f
}

// Updates is the stream of the Watch.
func (f *Follower) Updates() <-chan Update { return f.updates }

// Focus replaces the keys to re-read about once a second: the rows a person looks at stay
// fresher than the rest, whatever the server lets the scanner follow. Any goroutine may
// call it; it does no IO.
func (f *Follower) Focus(keys []string) {
	keys = append([]string(nil), keys...)
	f.mu.Lock()
	f.focus = keys
	f.mu.Unlock()
}

func (f *Follower) focused() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.focus
}

// focusEvery is how often the focused keys are re-read, and the status refreshed.
const focusEvery = time.Second

// rereadBatch bounds the keys re-read in one pipeline.
const rereadBatch = 1000

// watcher is the state of one Watch.
type watcher struct {
	s     *Scanner
	f     *Follower
	ctx   context.Context
	dirty *dirtyKeys
	// resync is signalled when a subscriber reconnected: the pass restarts.
	resync chan struct{}
	gen    atomic.Uint64 // the pass running, or the last one: the Gen of re-read records
	// expiring is set when a server is followed by events only: it re-reads keys as their
	// TTLs run out.
	expiring  *expiries
	serversMu sync.Mutex
	servers   []ServerFollow
	current   atomic.Pointer[pass] // the background pass running, nil otherwise
	last      atomic.Int64         // keys the last complete pass scanned

	// ordered makes the pass's batches and the re-reads reach the stream one at a time, and
	// holds the keys re-read during pass rereadGen: a pass's record of such a key may have
	// been read before the change the re-read saw (its batch waited for its fences, or for
	// the consumer), and sent after it would show a deleted lock, or an old holder, until the
	// next pass. The re-read is no older than anything a hint has not corrected since.
	ordered   sync.Mutex
	rereadGen uint64
	rereadNow map[string]struct{}
}

// sendPassBatch sends locks read by pass gen, without the keys a re-read sent since the pass
// began.
func (w *watcher) sendPassBatch(gen uint64, locks []Lock) bool {
	w.ordered.Lock()
	defer w.ordered.Unlock()
	if w.rereadGen == gen && len(w.rereadNow) > 0 {
		locks = slices.DeleteFunc(locks, func(l Lock) bool {
			_, reread := w.rereadNow[l.Key]
			return reread
		})
	}
	return len(locks) == 0 || w.send(Update{Kind: UpdateBatch, Gen: gen, Locks: locks})
}

// sendReread sends re-read locks, tagged with the pass running (or the last one).
func (w *watcher) sendReread(locks []Lock) bool {
	w.ordered.Lock()
	defer w.ordered.Unlock()
	gen := w.gen.Load()
	if w.rereadGen != gen {
		w.rereadGen, w.rereadNow = gen, map[string]struct{}{}
	}
	for i := range locks {
		w.rereadNow[locks[i].Key] = struct{}{}
	}
	return w.send(Update{Kind: UpdateBatch, Gen: gen, Locks: locks})
}

func (s *Scanner) watch(ctx context.Context, f *Follower) {
	defer close(f.updates)
	w := &watcher{s: s, f: f, ctx: ctx, dirty: newDirtyKeys(), resync: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	defer wg.Wait() // before the channel closes: they send on it
	w.servers = s.follow(ctx, w.dirty, w.reconnected, w.warn)
	for _, sf := range w.servers {
		if sf.Mechanism == FollowEvents {
			w.expiring = &expiries{at: map[int64]map[string]struct{}{}}
		}
	}
	// Sent before the first batch: the consumer knows from the start how fresh it is kept.
	if !w.send(Update{Kind: UpdateFollowing, Following: w.following()}) {
		return
	}
	wg.Go(w.rereads)
	wg.Go(w.reportFollowing)
	wg.Go(w.heartbeats)
	w.passes()
}

func (w *watcher) send(u Update) bool {
	select {
	case w.f.updates <- u:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *watcher) warn(msg string) { w.send(Update{Kind: UpdateWarning, Warning: msg}) }

func (w *watcher) reconnected() {
	select {
	case w.resync <- struct{}{}:
	default:
	}
}

// passes runs the first pass at full speed and the next ones paced, until ctx ends.
func (w *watcher) passes() {
	ctx, s := w.ctx, w.s
	paced := s.opts.ScanBudget < 1
	warned := map[string]bool{} // one warning per problem for the whole watch, not per pass
	for gen := uint64(1); ctx.Err() == nil; gen++ {
		w.gen.Store(gen)
		out := sink{
			batch: func(_ int, locks []Lock) error {
				if locks = compact(locks); len(locks) == 0 {
					return nil
				}
				w.expiring.note(locks)
				if !w.sendPassBatch(gen, locks) {
					return ctx.Err()
				}
				return nil
			},
			warn: func(msg string) {
				// Called concurrently by the pass's readers; the pass already dedups per pass.
				w.send(Update{Kind: UpdateWarning, Gen: gen, Warning: msg})
			},
			retrying: func(addr string, attempt int, in time.Duration, err error) {
				w.send(Update{Kind: UpdateRetrying, Gen: gen, Addr: addr, Attempt: attempt, RetryIn: in, Err: err})
			},
		}
		passCtx, cancel := context.WithCancel(ctx)
		background := gen > 1 && paced
		var restarted atomic.Bool
		if background {
			out.pace = newPacers(s.opts.ScanBudget, s.target.Mode).pace
			go func() { // a reconnect during a long paced pass starts it over
				select {
				case <-w.resync:
					restarted.Store(true)
					cancel()
				case <-passCtx.Done():
				}
			}()
		}
		p := s.newPass(out)
		// Independent servers' keys are distinct locks: nothing to merge while claiming, and
		// a key SCAN repeats only sends again a record the consumer keeps by server and key.
		p.repeatsLater = s.target.Mode == connect.Independent
		p.suppress(warned)
		if background {
			w.current.Store(p)
		}
		census, err := p.run(passCtx)
		w.current.Store(nil)
		cancel()
		for _, msg := range census.Warnings {
			warned[msg] = true
		}
		if ctx.Err() != nil {
			return
		}
		if restarted.Load() {
			continue
		}
		if err != nil {
			w.send(Update{Kind: UpdateError, Gen: gen, Err: err, Census: census})
		} else {
			w.send(Update{Kind: UpdatePassDone, Gen: gen, Census: census})
			w.last.Store(int64(census.Scanned))
		}
		rest := s.opts.Interval
		if !paced {
			// Unpaced passes keep a huge keyspace's server busy at most half the time.
			rest = max(rest, census.Duration)
		}
		if !w.rest(rest) {
			return
		}
	}
}

// rest waits d before the next pass, or less if a subscriber reconnected.
func (w *watcher) rest(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-timer.C:
	case <-w.resync:
	}
	return true
}

// rereads re-reads the keys the servers named, the focused keys about once a second, and
// the keys whose TTL ran out where no server tells of expiries.
func (w *watcher) rereads() {
	tick := time.NewTicker(focusEvery)
	defer tick.Stop()
	quiet := map[string]bool{} // warnings already sent by a re-read
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.dirty.wake:
		case now := <-tick.C:
			w.dirty.add(w.f.focused()...)
			w.dirty.add(w.expiring.due(now)...)
		}
		for keys := w.dirty.take(rereadBatch); len(keys) > 0; keys = w.dirty.take(rereadBatch) {
			locks := w.s.reread(w.ctx, keys, quiet, w.warn)
			if len(locks) == 0 {
				continue
			}
			w.expiring.note(locks)
			if !w.sendReread(locks) {
				return
			}
		}
	}
}

// heartbeats read every server's clock every HeartbeatEvery, each server on its own so that a
// frozen one holds no other back, and send each answer (UpdateClock): the consumer's proof
// that the server still answers, and the clock its ages are measured on. A server's next
// heartbeat starts once its last one has ended (on a frozen server, when the client's read
// timeout or, with ContextTimeoutEnabled, HeartbeatEvery ran out). A server that is no longer
// one of the target's (a cluster master demoted or removed) gets an UpdateClock without a
// Clock: the consumer forgets it rather than wait for its answer forever.
func (w *watcher) heartbeats() {
	tick := time.NewTicker(HeartbeatEvery)
	defer tick.Stop()
	var inFlight sync.Map // addresses whose heartbeat has not ended
	var probes sync.WaitGroup
	defer probes.Wait() // before the channel closes: they send on it
	var known map[string]bool
	for {
		targets, err := w.s.followTargets(w.ctx)
		if err == nil {
			current := make(map[string]bool, len(targets))
			for _, t := range targets {
				current[t.addr] = true
			}
			for addr := range known {
				if !current[addr] && !w.send(Update{Kind: UpdateClock, Addr: addr}) {
					return
				}
			}
			known = current
		}
		for _, t := range targets {
			if _, busy := inFlight.LoadOrStore(t.addr, true); busy {
				continue
			}
			probes.Go(func() {
				defer inFlight.Delete(t.addr)
				ctx, cancel := context.WithTimeout(w.ctx, HeartbeatEvery)
				defer cancel()
				if clock, err := readClock(ctx, t); err == nil {
					w.send(Update{Kind: UpdateClock, Addr: t.addr, Clock: clock})
				}
			})
		}
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reportFollowing sends UpdateFollowing whenever it changed, checked about once a second.
func (w *watcher) reportFollowing() {
	tick := time.NewTicker(focusEvery)
	defer tick.Stop()
	sent := w.following()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		}
		w.followNewMasters()
		if f := w.following(); f.Rescan != sent.Rescan || len(f.Servers) != len(sent.Servers) {
			if !w.send(Update{Kind: UpdateFollowing, Following: f}) {
				return
			}
			sent = f
		}
	}
}

func (w *watcher) following() Following {
	w.serversMu.Lock()
	servers := w.servers
	w.serversMu.Unlock()
	return Following{Servers: servers, Budget: w.s.opts.ScanBudget, Rescan: w.progress()}
}

// progress is how far the background pass is, in whole percent as a fraction: its keys so far
// against the last complete pass's, at most 0.99 until it ends; 0 when none runs.
func (w *watcher) progress() float64 {
	p, last := w.current.Load(), w.last.Load()
	if p == nil || last <= 0 {
		return 0
	}
	pct := min(99, 100*p.scanned.Load()/last)
	return float64(pct) / 100
}

// followNewMasters follows the cluster masters that were not masters when the watch began (a
// replica promoted by a failover, a node given slots), and starts the pass over, since what
// they changed meanwhile was not heard. The cluster's view is refreshed in the background
// (a CLUSTER SLOTS) for the next call.
func (w *watcher) followNewMasters() {
	cc, ok := w.s.target.Clients[0].(*redis.ClusterClient)
	if !ok || w.s.target.Mode != connect.Cluster {
		return
	}
	defer cc.ReloadState(w.ctx)
	targets, err := w.s.followTargets(w.ctx)
	if err != nil {
		return
	}
	w.serversMu.Lock()
	servers := slices.Clone(w.servers)
	w.serversMu.Unlock()
	added := false
	for _, t := range targets {
		if slices.ContainsFunc(servers, func(sf ServerFollow) bool { return sf.Addr == t.addr }) {
			continue
		}
		mech := w.s.followServer(w.ctx, t, false, w.dirty, w.reconnected, w.warn)
		servers = append(servers, ServerFollow{Addr: t.addr, Mechanism: mech})
		added = true
	}
	if !added {
		return
	}
	slices.SortFunc(servers, func(a, b ServerFollow) int { return strings.Compare(a.Addr, b.Addr) })
	w.serversMu.Lock()
	w.servers = servers
	w.serversMu.Unlock()
	w.reconnected()
}
