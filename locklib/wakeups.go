package locklib

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Wake-ups tell a waiting Obtain that its key may be free, so it need not wait for its next
// poll (store.wakeups). The single-instance store addresses each wake-up to one waiter in its
// queue (wakeHub); Redlock, which has no queue, hears every release on every instance and
// wakes its longest-waiting local waiter (redlockWakeups).

// wakeHub is a Client's one shared pub/sub subscription, multiplexed over every key and
// waiter. Scripts publish "<waiter id>\n<key>" on protocol.WakeChannelPrefix + <client id>
// for the first waiter in a key's queue; the hub signals that waiter only (or, for a waiter it
// has not seen attempt yet, every local waiter on the key). It subscribes lazily, the
// first time a waiter actually has to wait. It also carries grants: locks that a release
// by this client wrote for one of its own waiters.
type wakeHub struct {
	rdb redis.UniversalClient

	mu       sync.Mutex
	byKey    map[string]map[*wakeReg]struct{}
	byWaiter map[string]*wakeReg
	bySignal map[<-chan struct{}]*wakeReg
	grants   map[string]grant // by waiter id: locks handed over by this client's releases
	// gaveUp lists the waiters whose Obtain gave up lately, with when: a hand-off to one of
	// them has nobody to take it and must be cleaned up.
	gaveUp map[string]time.Time
	pubsub *redis.PubSub
	closed bool
	wg     sync.WaitGroup
}

// hubPingInterval is how long the subscription may stay quiet before it is pinged.
const hubPingInterval = 30 * time.Second

type wakeReg struct {
	// keys are the keys the waiter waits for: one, or a multi-key lock's set (which never
	// queues, so no wake-up names it: freed and signalUnbound wake it).
	keys   []string
	waiter string // known after the waiter's first attempt
	ch     chan struct{}
}

func newWakeHub(rdb redis.UniversalClient) *wakeHub {
	return &wakeHub{rdb: rdb, byKey: map[string]map[*wakeReg]struct{}{},
		byWaiter: map[string]*wakeReg{}, bySignal: map[<-chan struct{}]*wakeReg{}, grants: map[string]grant{},
		gaveUp: map[string]time.Time{}}
}

// grant is a lock the release script wrote for one of this client's waiters.
type grant struct {
	value      string // the value the release script wrote (its timestamp is the server's)
	token      int64
	validUntil time.Time // send time of the release + ttl: the hand-off happened later
	waiters    int64
}

// handOverResult says what became of a hand-off.
type handOverResult int

const (
	handedToWaiter    handOverResult = iota // the waiter takes it with its next attempt
	handedToAbandoned                       // the waiter's Obtain gave up: nobody takes it
	handedToTaken                           // the waiter had taken it with its own attempt
)

// handOver records a grant for waiter and wakes it; its next acquire takes the grant without
// a round trip. A waiter that gave up takes nothing, even while its Obtain is still on its
// way out; one that is not registered any more and did not give up has taken the lock with
// an attempt that crossed the hand-off (acquire.lua sees its own value).
func (h *wakeHub) handOver(waiter string, g grant) handOverResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.gaveUp[waiter]; ok {
		return handedToAbandoned
	}
	if r := h.byWaiter[waiter]; r != nil {
		h.grants[waiter] = g
		signal(r.ch)
		return handedToWaiter
	}
	return handedToTaken
}

// gaveUpMemory is how long a waiter that gave up is remembered: longer than a release that
// was sent before it gave up can take to answer.
const gaveUpMemory = time.Minute

// abandoned records that waiter's Obtain gave up.
func (h *wakeHub) abandoned(waiter string) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for w, at := range h.gaveUp {
		if now.Sub(at) > gaveUpMemory {
			delete(h.gaveUp, w)
		}
	}
	h.gaveUp[waiter] = now
}

// signalKey wakes every local waiter on key.
func (h *wakeHub) signalKey(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for r := range h.byKey[key] {
		signal(r.ch)
	}
}

// freed wakes the waiters on keys that no wake-up names (multi-key locks, and waiters that
// have not attempted yet): a lock of this Client on them was released.
func (h *wakeHub) freed(keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range keys {
		h.signalUnbound(key)
	}
}

// signalUnbound wakes the waiters on key whose id is not known yet.
func (h *wakeHub) signalUnbound(key string) {
	for r := range h.byKey[key] {
		if r.waiter == "" {
			signal(r.ch)
		}
	}
}

// takeGrant removes and returns the grant for waiter, if any.
func (h *wakeHub) takeGrant(waiter string) (grant, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.grants[waiter]
	if ok {
		delete(h.grants, waiter)
	}
	return g, ok
}

// register returns a signal channel for one waiter on keys, and its stop function.
func (h *wakeHub) register(keys []string) (<-chan struct{}, func()) {
	r := &wakeReg{keys: keys, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	for _, key := range keys {
		regs := h.byKey[key]
		if regs == nil {
			regs = map[*wakeReg]struct{}{}
			h.byKey[key] = regs
		}
		regs[r] = struct{}{}
	}
	h.bySignal[r.ch] = r
	h.mu.Unlock()
	return r.ch, func() { h.unregister(r) }
}

func (h *wakeHub) unregister(r *wakeReg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range r.keys {
		if regs := h.byKey[key]; regs != nil {
			delete(regs, r)
			if len(regs) == 0 {
				delete(h.byKey, key)
			}
		}
	}
	delete(h.bySignal, r.ch)
	if r.waiter != "" && h.byWaiter[r.waiter] == r {
		delete(h.byWaiter, r.waiter)
		delete(h.grants, r.waiter) // its Obtain has returned: taken, or left (leave.lua)
	}
}

// bind ties a waiter id to the signal channel its Obtain registered. An Obtain whose lock
// came too late starts over under a new id: the signal moves to it.
func (h *wakeHub) bind(sig <-chan struct{}, waiter string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.bySignal[sig]
	if r == nil || r.waiter == waiter {
		return
	}
	if r.waiter != "" && h.byWaiter[r.waiter] == r {
		delete(h.byWaiter, r.waiter)
		delete(h.grants, r.waiter)
	}
	r.waiter = waiter
	h.byWaiter[waiter] = r
	if _, ok := h.grants[waiter]; ok {
		signal(r.ch)
	}
}

// start subscribes to channel once; later calls do nothing.
func (h *wakeHub) start(channel string) {
	h.mu.Lock()
	if h.closed || h.pubsub != nil {
		h.mu.Unlock()
		return
	}
	ps := h.rdb.Subscribe(context.Background()) // no channel yet: no connection made here
	h.pubsub = ps
	h.wg.Add(1)
	h.mu.Unlock()
	go h.run(ps, channel)
}

func (h *wakeHub) run(ps *redis.PubSub, channel string) {
	defer h.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	// An error here (server down) is not final: Subscribe records the channel, and the
	// next Receive reconnects and resubscribes.
	_ = ps.Subscribe(ctx, channel)
	cancel()
	// Read the subscription directly (not through PubSub.Channel, one goroutine hop less on
	// every hand-off); a receive error reconnects and resubscribes on the next call. A
	// quiet connection is pinged now and then, so a dead one is noticed and replaced.
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), hubPingInterval)
		if err != nil {
			if h.isClosed() {
				return
			}
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = ps.Ping(ctx) // a failed write drops the connection; Receive redials
				cancel()
			} else {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		if m, ok := msg.(*redis.Message); ok {
			if waiter, key, ok := strings.Cut(m.Payload, "\n"); ok {
				h.deliver(waiter, key)
			}
		}
	}
}

func (h *wakeHub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *wakeHub) deliver(waiter, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.byWaiter[waiter]; r != nil && slices.Contains(r.keys, key) {
		signal(r.ch)
		return
	}
	h.signalUnbound(key)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // already signalled
	}
}

// close ends the subscription and waits for its goroutine.
func (h *wakeHub) close() error {
	h.mu.Lock()
	h.closed = true
	ps := h.pubsub
	h.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	h.wg.Wait()
	return err
}

// redlockWakeups multiplexes release messages to waiters: one subscription per instance per
// Client, started with the first waiter, whatever the number of keys and waiters. A release
// reaches this Client once per instance, and wakes only the longest-waiting local waiter of
// the key, so a release costs this Client one attempt (each is N round trips) instead of a
// herd of them. The others keep their back-off polling. The first copy wakes the waiter at
// once; but the instances delete in parallel, so that attempt can still find the lock on
// some of them and fail. The quorum-th copy, when a quorum has let go, wakes the same waiter
// once more if it is still waiting: without it the waiter would sleep out its back-off.
type redlockWakeups struct {
	clients []redis.UniversalClient
	quorum  int

	mu      sync.Mutex
	started bool
	closed  bool
	subs    []*redis.PubSub
	waiters map[string][]*redlockWaiter // by key, longest-waiting first
	woken   map[string]redlockRelease   // by key: the release that last woke a waiter
	readers sync.WaitGroup
}

// redlockRelease counts the copies heard of one release, and whom its first copy woke.
type redlockRelease struct {
	value  string
	copies int
	woke   chan struct{}
}

// redlockWaiter is one waiting Obtain.
type redlockWaiter struct {
	signal    chan struct{}
	announced bool // its waiting event was published
}

func newRedlockWakeups(clients []redis.UniversalClient, quorum int) *redlockWakeups {
	return &redlockWakeups{clients: clients, quorum: quorum, waiters: map[string][]*redlockWaiter{}, woken: map[string]redlockRelease{}}
}

// subscribe registers a waiter for key. The signal channel holds at most one pending wake-up.
func (w *redlockWakeups) subscribe(key string) (<-chan struct{}, func()) {
	signal := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return signal, func() {} // no signals after Close; the waiter's polling still works
	}
	if !w.started {
		w.start()
	}
	w.waiters[key] = append(w.waiters[key], &redlockWaiter{signal: signal})
	return signal, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.waiters[key] = slices.DeleteFunc(w.waiters[key], func(r *redlockWaiter) bool { return r.signal == signal })
		if len(w.waiters[key]) == 0 {
			delete(w.waiters, key)
			delete(w.woken, key)
		}
	}
}

// start subscribes on every instance. Called with mu held; the network work happens in the
// readers, so a frozen instance delays nobody. go-redis resubscribes after reconnecting.
func (w *redlockWakeups) start() {
	w.started = true
	for _, c := range w.clients {
		ps := c.Subscribe(context.Background()) // no channel yet: no connection made here
		w.subs = append(w.subs, ps)
		w.readers.Add(1)
		go func() {
			defer w.readers.Done()
			_ = ps.Subscribe(context.Background(), protocol.RedlockReleasedChannel) // retried on reconnect
			for msg := range ps.Channel() {
				if key, value, ok := strings.Cut(msg.Payload, "\n"); ok {
					w.released(key, value)
				}
			}
		}()
	}
}

// released wakes the longest-waiting waiter of key on a release's first copy, and again on
// its quorum-th copy if that waiter still waits.
func (w *redlockWakeups) released(key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	waiters := w.waiters[key]
	if len(waiters) == 0 {
		return
	}
	r := w.woken[key]
	if r.value != value {
		w.woken[key] = redlockRelease{value: value, copies: 1, woke: waiters[0].signal}
		signal(waiters[0].signal)
		return
	}
	r.copies++
	w.woken[key] = r
	if r.copies == w.quorum && waiters[0].signal == r.woke {
		signal(r.woke)
	}
}

// startsWaiting reports whether the Obtain with this signal has just found key taken for the
// first time (so its waiting event is due), and how many of this Client's Obtains wait on key.
func (w *redlockWakeups) startsWaiting(key string, signal <-chan struct{}) (first bool, waiters int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.waiters[key] {
		if r.signal == signal && !r.announced {
			r.announced, first = true, true
		}
	}
	return first, len(w.waiters[key])
}

// close ends the subscriptions and waits for their readers.
func (w *redlockWakeups) close() {
	w.mu.Lock()
	w.closed = true
	subs := w.subs
	w.subs = nil
	w.mu.Unlock()
	for _, ps := range subs {
		_ = ps.Close()
	}
	w.readers.Wait()
}
