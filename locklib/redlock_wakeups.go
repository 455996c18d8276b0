package locklib

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// redlockWakeups multiplexes release messages to waiters: one subscription per instance per
// Client, started with the first waiter, whatever the number of keys and waiters. A release
// reaches this Client once per instance; only the first copy counts, and it wakes only the
// longest-waiting local waiter of the key, so a release costs one attempt per Client instead
// of a herd of them (each attempt is N round trips). The others keep their back-off polling.
type redlockWakeups struct {
	clients []redis.UniversalClient

	mu      sync.Mutex
	started bool
	closed  bool
	subs    []*redis.PubSub
	waiters map[string][]*redlockWaiter // by key, longest-waiting first
	woken   map[string]string           // by key: the released value that last woke a waiter
	readers sync.WaitGroup
}

// redlockWaiter is one waiting Obtain.
type redlockWaiter struct {
	signal    chan struct{}
	announced bool // its waiting event was published
}

func newRedlockWakeups(clients []redis.UniversalClient) *redlockWakeups {
	return &redlockWakeups{clients: clients, waiters: map[string][]*redlockWaiter{}, woken: map[string]string{}}
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

// released wakes the longest-waiting waiter of key, once per released value.
func (w *redlockWakeups) released(key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	waiters := w.waiters[key]
	if len(waiters) == 0 || w.woken[key] == value {
		return
	}
	w.woken[key] = value
	select {
	case waiters[0].signal <- struct{}{}:
	default: // already signalled
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
