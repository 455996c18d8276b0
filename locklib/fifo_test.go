package locklib

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Waiters get the lock in the order they arrived, across clients.
func TestFIFOOrder(t *testing.T) {
	srv := redistest.Start(t)
	holder, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	const key = "lock:fifo"
	held := mustObtain(t, holder, ctx, key, 10*time.Second)
	clients := []*Client{}
	for range 3 {
		c, _ := newTestClient(t, srv)
		clients = append(clients, c)
	}
	const waiters = 8
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range waiters {
		// Enqueue one at a time, so arrival order is known.
		wg.Go(func() {
			l, err := clients[i%len(clients)].Obtain(ctx, key, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
		waitForWaiters(t, rdb, key, i+1)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("lock order %v, want arrival order", order)
		}
	}
}

func TestTryObtainDoesNotJumpQueue(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:jump"
	// A waiter entry as a live Obtain elsewhere would leave it: present for a while.
	now := time.Now().UnixMilli()
	rdb.ZAdd(ctx, protocol.WaitQueueKey(key), redisZ(float64(now), "ffffffffffffffff:1"))
	rdb.ZAdd(ctx, protocol.WaitPresenceKey(key), redisZ(float64(now+300), "ffffffffffffffff:1"))
	_, err := c.TryObtain(ctx, key, time.Second)
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtain jumped the queue: %v", err)
	}
	// The waiter never comes back (crashed): its entry goes stale and the key is free again.
	l := mustObtain(t, c, ctx, key, time.Second)
	if n := rdb.ZCard(ctx, protocol.WaitQueueKey(key)).Val(); n != 0 {
		t.Fatalf("stale waiter not pruned: %d left", n)
	}
	_ = l.Release(ctx)
}

func TestEventsPublished(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	events := subscribeEvents(t, rdb)
	const key = "lock:events"
	a := mustObtain(t, c, ctx, key, 300*time.Millisecond, WithTrace("t-1"), WithWatchdog(), WithMaxRenewals(1))
	got := make(chan *Lock, 1)
	go func() {
		l, err := c.Obtain(ctx, key, time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	<-a.Lost() // one renewal, then the lock runs out: the waiter takes it
	b := <-got
	if b == nil {
		t.FailNow()
	}
	go func() { // queued behind b: b's release hands the lock over to it
		l, err := c.Obtain(ctx, key, time.Second, WithTrace("t:3"))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitForWaiters(t, rdb, key, 1)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	third := <-got
	if third == nil {
		t.FailNow()
	}
	if third.Token() <= b.Token() {
		t.Fatalf("handed-over token %d not above %d", third.Token(), b.Token())
	}
	if err := third.Release(ctx); err != nil {
		t.Fatal(err)
	}

	want := []EventType{EventAcquired, EventWaiting, EventRenewed, EventLost, EventAcquired,
		EventWaiting, EventReleased, EventAcquired, EventReleased}
	var seen []EventType
	for len(seen) < len(want) {
		e := events.next(t)
		if e.Key != key || e.AtMs == 0 || e.Node != "test" {
			t.Fatalf("event %+v", e)
		}
		if e.Type == string(EventAcquired) && e.Trace == "t:3" && (e.Value != third.Value() || e.Token != third.Token()) {
			t.Fatalf("hand-over event %+v, want value %q token %d", e, third.Value(), third.Token())
		}
		switch {
		case e.Type == string(EventAcquired) && e.Token == 0, e.Type == string(EventWaiting) && e.Waiters != 1,
			e.Type == string(EventRenewed) && e.TTLMs <= 0, e.Type == string(EventLost) && e.Reason == "",
			e.Type == string(EventAcquired) && len(seen) == 0 && e.Trace != "t-1":
			t.Fatalf("event %q lacks its fields: %+v", e.Type, e)
		}
		seen = append(seen, EventType(e.Type))
	}
	// lost (sent from Go) and the waiter's acquired (sent by the script) race.
	slices.Sort(seen)
	slices.Sort(want)
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", seen, want)
	}
}

func TestEventsOff(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv, WithEvents(false))
	ctx := testCtx(t, 10*time.Second)
	sub := rdb.Subscribe(ctx, protocol.EventsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	l := mustObtain(t, c, ctx, "lock:quiet", time.Second)
	_ = l.Release(ctx)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if msg, err := sub.ReceiveMessage(short); err == nil {
		t.Fatalf("event published with events off: %s", msg.Payload)
	}
}

// waitForWaiters waits until key's queue holds n waiters.
func waitForWaiters(t *testing.T, rdb *redis.Client, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rdb.ZCard(context.Background(), protocol.WaitQueueKey(key)).Val() != int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters never queued on %s", n, key)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A waiter that gives up just after a release handed it the lock does not keep the lock:
// leaving releases it, and a later Obtain is not blocked.
func TestLeaveAfterHandOverReleases(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:left"
	held := mustObtain(t, c, ctx, key, 5*time.Second)
	s := c.store.(*singleStore)
	now := time.Now()
	signal, stop := s.wakeups(key)
	defer stop()
	req := acquireRequest{key: key, value: protocol.NewValue("test", "", now), ttl: 5 * time.Second,
		op: c.nextOpID(), queue: true, start: now, wake: signal}
	if res, err := s.acquire(ctx, req); err != nil || res.acquired {
		t.Fatalf("waiter attempt: %+v %v", res, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := protocol.ParseValue(rdb.Get(ctx, key).Val())
	if err != nil || got.Rand != req.value.Rand || got.Node != req.value.Node {
		t.Fatalf("after the release the key holds %+v (%v), want the waiter's value %+v", got, err, req.value)
	}
	if err := s.abandon(ctx, req); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Fatal("the handed-over lock outlived its waiter's leaving")
	}
	if _, ok := s.hub.takeGrant(req.op); ok {
		t.Fatal("grant kept after leaving")
	}
	l, err := c.TryObtain(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}

// A lock's timestamp is when it was taken, not when its Obtain began to wait: both for a
// hand-off inside one client and for a waiter of another client woken by a message.
func TestAcquiredAtIsTakeTimeNotWaitStart(t *testing.T) {
	srv := redistest.Start(t)
	holderClient, rdb := newTestClient(t, srv)
	otherClient, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	const key = "lock:stamp"
	held := mustObtain(t, holderClient, ctx, key, 5*time.Second)
	got := make(chan *Lock, 2)
	for _, c := range []*Client{holderClient, otherClient} {
		go func() {
			l, err := c.Obtain(ctx, key, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	waitForWaiters(t, rdb, key, 2)
	const waited = 300 * time.Millisecond
	time.Sleep(waited)
	for range 2 {
		releasedAt := time.Now()
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		held = <-got
		if held == nil {
			t.FailNow()
		}
		v, err := protocol.ParseValue(held.Value())
		if err != nil {
			t.Fatal(err)
		}
		// Same machine, same clock: the stamp is at or after the release, give or take a
		// millisecond of rounding; an Obtain-start stamp would be 300ms earlier.
		if early := releasedAt.Sub(v.AcquiredAt); early > waited/2 {
			t.Fatalf("lock taken at %v carries timestamp %v (%v earlier)", releasedAt, v.AcquiredAt, early)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
