package locklib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// mustHoldAll fails unless every key holds value, and every key's fence counter token.
func mustHoldAll(t *testing.T, rdb *redis.Client, keys []string, value string, token int64) {
	t.Helper()
	for _, key := range keys {
		if v, _ := redistest.Value(t, rdb, key); v != value {
			t.Fatalf("%s holds %q, want the multi-key lock's %q", key, v, value)
		}
		if f := rdb.Get(context.Background(), protocol.FenceKey(key)).Val(); f != strconv.FormatInt(token, 10) {
			t.Fatalf("%s's fence counter is %q, want the lock's token %d", key, f, token)
		}
	}
}

// One key held by someone else: nothing is taken. Once it is free, every key is taken with
// one value and one token, above the token the key had before.
func TestMultiAllOrNone(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi:a", "lock:multi:b", "lock:multi:c"}

	held := mustObtain(t, other, ctx, keys[1], 10*time.Second)
	_, err := c.TryObtainMulti(ctx, keys, 10*time.Second)
	if !errors.Is(err, ErrNotObtained) || !strings.Contains(err.Error(), strconv.Quote(keys[1])) {
		t.Fatalf("TryObtainMulti with %s held: %v, want ErrNotObtained naming it", keys[1], err)
	}
	for _, key := range []string{keys[0], keys[2], protocol.FenceKey(keys[0])} {
		if rdb.Exists(ctx, key).Val() != 0 {
			t.Fatalf("%s exists after a refused TryObtainMulti: it took part of the set", key)
		}
	}
	// A waiting ObtainMulti takes them all once the holder lets go.
	time.AfterFunc(100*time.Millisecond, func() { _ = held.Release(context.Background()) })
	l, err := c.ObtainMulti(ctx, keys, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Keys(), keys) || l.Key() != keys[0] {
		t.Fatalf("Keys() = %v, Key() = %q; want %v", l.Keys(), l.Key(), keys)
	}
	if l.Token() <= held.Token() {
		t.Fatalf("token %d, not above %s's last token %d", l.Token(), keys[1], held.Token())
	}
	mustHoldAll(t, rdb, keys, l.Value(), l.Token())
	for _, key := range keys {
		mustNotObtain(t, other, key, "the multi-key lock holds it")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		mustBeFreeWithin(t, rdb, key, 0)
	}
}

// A set of thousands of keys works in every script: taken, refused on an overlapping
// holder and cleaned up after, released.
func TestMultiManyKeys(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 20*time.Second)
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = "lock:multi-many:" + strconv.Itoa(i)
	}
	l, err := c.ObtainMulti(ctx, keys[:2000], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.ObtainMulti(short, keys[1000:], 10*time.Second); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("an overlapping set of 2000: %v, want ErrNotObtained", err)
	}
	redistest.Eventually(t, "the clean-up recorded the operation as ended on its last key", func() bool {
		return rdb.ZCard(ctx, protocol.EndedKey(keys[len(keys)-1])).Val() == 1
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, keys...).Val(); n != 0 {
		t.Fatalf("%d keys still exist", n)
	}
}

// The token is above every key's last one, however far apart the counters are, and each
// key's next token is above it.
func TestMultiTokenAboveEveryKey(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi-token:a", "lock:multi-token:b", "lock:multi-token:c"}
	// b's counter runs an hour ahead of the clock (a clock stepped back since its last token).
	ahead := time.Now().Add(time.Hour).UnixMicro()
	rdb.Set(ctx, protocol.FenceKey(keys[1]), ahead, time.Minute)
	first := mustObtain(t, c, ctx, keys[2], time.Second)
	_ = first.Release(ctx)

	l, err := c.TryObtainMulti(ctx, keys, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != ahead+1 {
		t.Fatalf("token %d, want %d: one above the highest counter", l.Token(), ahead+1)
	}
	mustHoldAll(t, rdb, keys, l.Value(), l.Token())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		next := mustObtain(t, c, ctx, key, time.Second)
		if next.Token() <= l.Token() {
			t.Fatalf("%s: token %d after the multi-key lock's %d", key, next.Token(), l.Token())
		}
		_ = next.Release(ctx)
	}
}

// Many goroutines on two Clients take random overlapping sets of keys, and plain locks on
// single keys, all at once: every ObtainMulti returns (all keys at once, no hold-and-wait, so
// no deadlock), no key is ever held twice, and each key's tokens increase.
func TestMultiOverlappingSets(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newTestClient(t, srv, WithBackoff(time.Millisecond, 20*time.Millisecond))
	b, _ := newTestClient(t, srv, WithBackoff(time.Millisecond, 20*time.Millisecond))
	ctx := testCtx(t, 30*time.Second)
	const nKeys, workers, rounds = 6, 12, 15
	var inside [nKeys]atomic.Int32
	var last [nKeys]atomic.Int64
	var overlaps, backwards, sections atomic.Int32
	key := func(i int) string { return "lock:multi-overlap:" + strconv.Itoa(i) }
	enter := func(set []int, token int64) {
		for _, i := range set {
			if inside[i].Add(1) != 1 {
				overlaps.Add(1)
			}
			if token <= last[i].Load() {
				backwards.Add(1)
			}
			last[i].Store(token)
		}
		sections.Add(1)
		time.Sleep(time.Millisecond)
		for _, i := range set {
			inside[i].Add(-1)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		c := a
		if w%2 == 1 {
			c = b
		}
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for range rounds {
				set := rng.Perm(nKeys)[:1+rng.IntN(3)]
				var l *Lock
				var err error
				if w < 2 { // plain locks on single keys, queued FIFO, among the sets
					set = set[:1]
					l, err = c.Obtain(ctx, key(set[0]), 5*time.Second)
				} else {
					keys := make([]string, len(set))
					for i, k := range set {
						keys[i] = key(k)
					}
					l, err = c.ObtainMulti(ctx, keys, 5*time.Second)
				}
				if err != nil {
					t.Error(err)
					return
				}
				enter(set, l.Token())
				if err := l.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 || backwards.Load() != 0 || sections.Load() != workers*rounds {
		t.Fatalf("overlaps=%d tokens not increasing=%d sections=%d; want 0, 0, %d",
			overlaps.Load(), backwards.Load(), sections.Load(), workers*rounds)
	}
}

// Refresh and the watchdog extend every key (and its counter), TTL is the shortest key's,
// Release deletes them all at once.
func TestMultiRefreshAndRelease(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi-refresh:a", "lock:multi-refresh:b"}
	l, err := c.ObtainMulti(ctx, keys, 300*time.Millisecond, WithWatchdog())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // twice the ttl: the watchdog kept every key
	if l.Err() != nil {
		t.Fatal(l.Err())
	}
	if err := l.Refresh(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		for _, k := range []string{key, protocol.FenceKey(key)} {
			if d := rdb.PTTL(ctx, k).Val(); d < 4*time.Second {
				t.Fatalf("%s: PTTL %v after Refresh(5s)", k, d)
			}
		}
	}
	rdb.PExpire(ctx, keys[1], 2*time.Second)
	if d, err := l.TTL(ctx); err != nil || d > 2*time.Second || d < time.Second {
		t.Fatalf("TTL = %v, %v; want the shortest key's, about 2s", d, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		mustBeFreeWithin(t, rdb, key, 0)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
}

// One key lost (deleted by an operator, say): Refresh fails with ErrNotHeld and extends
// nothing, the Lock is Lost, and Release frees the keys it still holds and says ErrNotHeld,
// also when its first reply was lost and go-redis sent it again.
func TestMultiKeyLost(t *testing.T) {
	fx := newFaulty(t)
	c, rdb := fx.c, fx.rdb
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi-lost:a", "lock:multi-lost:b", "lock:multi-lost:c"}
	l, err := c.ObtainMulti(ctx, keys, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, keys[1])
	if err := l.Refresh(ctx, 20*time.Second); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Refresh with %s gone: %v, want ErrNotHeld", keys[1], err)
	}
	waitLost(t, l, time.Second, "after a refused Refresh", ErrLost, ErrNotHeld)
	if d := rdb.PTTL(ctx, keys[0]).Val(); d > 5*time.Second {
		t.Fatalf("%s extended to %v by a Refresh that failed", keys[0], d)
	}
	if d, err := l.TTL(ctx); err != nil || d != 0 {
		t.Fatalf("TTL of a Lock that lost a key: %v, %v; want 0", d, err)
	}
	fired := fx.faults.DropReply(isScript(scriptMultiRelease))
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release with a key lost: %v, want ErrNotHeld", err)
	}
	<-fired
	for _, key := range keys {
		mustBeFreeWithin(t, rdb, key, 0)
	}
}

// Every multi-key request whose reply was lost (go-redis sends it again, so the server runs
// it twice) gives the outcome of one run: taken once, with the token of that run; refreshed;
// released without ErrNotHeld.
func TestMultiRunTwice(t *testing.T) {
	fx := newFaulty(t)
	c, rdb, f := fx.c, fx.rdb, fx.faults
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi-twice:a", "lock:multi-twice:b"}
	events := subscribeEvents(t, fx.srv.Client())
	fired := f.DropReply(isScript(scriptMultiAcquire))
	l, err := c.TryObtainMulti(ctx, keys, 10*time.Second)
	<-fired
	if err != nil {
		t.Fatalf("TryObtainMulti whose first reply was lost: %v", err)
	}
	mustHoldAll(t, rdb, keys, l.Value(), l.Token())
	fired = f.DropReply(isScript(scriptMultiRefresh))
	if err := l.Refresh(ctx, 20*time.Second); err != nil {
		t.Fatalf("Refresh whose first reply was lost: %v", err)
	}
	<-fired
	fired = f.DropReply(isScript(scriptMultiRelease))
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release whose first reply was lost: %v, want nil", err)
	}
	<-fired
	for _, key := range keys {
		mustBeFreeWithin(t, rdb, key, 0)
	}
	// Each key was taken once: one acquired event, with the Lock's token, then released.
	acquired := map[string]int{}
	for released := 0; released < len(keys); {
		e := events.next(t)
		switch EventType(e.Type) {
		case EventAcquired:
			acquired[e.Key]++
			if e.Token != l.Token() {
				t.Fatalf("acquired event with token %d, the Lock has %d: the copy took the keys again", e.Token, l.Token())
			}
		case EventReleased:
			released++
		}
	}
	for _, key := range keys {
		if acquired[key] != 1 {
			t.Fatalf("%d acquired events for %s, want 1", acquired[key], key)
		}
	}
}

// eventStream is a subscription to locklib's events channel.
type eventStream struct{ sub *redis.PubSub }

func subscribeEvents(t *testing.T, rdb *redis.Client) eventStream {
	t.Helper()
	sub := rdb.Subscribe(context.Background(), protocol.EventsChannel)
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eventStream{sub}
}

// next is the next event, failing the test after 5 s without one.
func (s eventStream) next(t *testing.T) protocol.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := s.sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var e protocol.Event
	if err := json.Unmarshal([]byte(msg.Payload), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// An ObtainMulti that gave up leaves nothing: neither what its attempt took while the reply
// was held back (its clean-up deletes it), nor what a copy of its request that runs after
// the clean-up would take (the ended set refuses it).
func TestMultiLateAcquireTakesNothing(t *testing.T) {
	keys := []string{"lock:multi-late:a", "lock:multi-late:b"}
	t.Run("reply held back", func(t *testing.T) {
		fx := newFaulty(t)
		release := make(chan struct{})
		defer close(release)
		ran := fx.faults.HoldReply(isScriptWith(scriptMultiAcquire, "late-multi"), release)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		l, err := fx.c.ObtainMulti(ctx, keys, 20*time.Second, WithTrace("late-multi"))
		if err == nil {
			_ = l.Release(context.Background())
			t.Fatal("ObtainMulti returned a lock after its context ended")
		}
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) ||
			!strings.Contains(err.Error(), `multi-key lock on "lock:multi-late:a", "lock:multi-late:b"`) {
			t.Fatalf("err = %v, want ErrNotObtained and the context's error, naming the keys", err)
		}
		<-ran
		for _, key := range keys {
			mustBeFreeWithin(t, fx.rdb, key, time.Second)
		}
	})
	t.Run("copy run after the clean-up", func(t *testing.T) {
		srv := redistest.Start(t)
		c, rdb := newTestClient(t, srv)
		other, _ := newTestClient(t, srv)
		sent := &commandLog{}
		rdb.AddHook(sent)
		held := mustObtain(t, other, testCtx(t, 5*time.Second), keys[1], 10*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := c.ObtainMulti(ctx, keys, 20*time.Second); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("ObtainMulti with %s held: %v, want ErrNotObtained", keys[1], err)
		}
		_ = held.Release(context.Background())
		// The clean-up runs in the background after ObtainMulti returned: the copy below
		// is to come after it (else it would find the keys free and take them, rightly).
		redistest.Eventually(t, "the clean-up recorded the ObtainMulti as ended", func() bool {
			return rdb.ZCard(context.Background(), protocol.EndedKey(keys[0])).Val() > 0
		})
		attempt := sent.last(isScript(scriptMultiAcquire))
		if attempt == nil {
			t.Fatal("no multi-key acquire was sent")
		}
		// The same request again, as a copy that was stuck on its way would run now.
		reply, err := rdb.Do(context.Background(), attempt...).Slice()
		if err != nil || len(reply) == 0 || reply[0] != int64(-2) {
			t.Fatalf("a copy of the acquire after its ObtainMulti gave up: %v, %v; want status -2 (ended)", reply, err)
		}
		for _, key := range keys {
			mustBeFreeWithin(t, rdb, key, 0)
		}
	})
}

// commandLog is a go-redis hook that records the commands a client sends.
type commandLog struct {
	mu   sync.Mutex
	cmds [][]any
}

func (h *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.cmds = append(h.cmds, slices.Clone(cmd.Args()))
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// last is the last command sent that match accepts (its arguments as text), nil if none.
func (h *commandLog) last(match func(cmd []string) bool) []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.cmds) - 1; i >= 0; i-- {
		text := make([]string, len(h.cmds[i]))
		for j, a := range h.cmds[i] {
			text[j] = fmt.Sprint(a)
		}
		if match(text) {
			return h.cmds[i]
		}
	}
	return nil
}

// A multi-key lock never jumps a single-key FIFO queue: a free key with a live waiter is not
// taken. A waiter whose presence ran out no longer counts.
func TestMultiDoesNotJumpTheQueue(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	keys := []string{"lock:multi-queue:a", "lock:multi-queue:b"}
	entry := protocol.QueueEntry("0123456789abcdef:1", time.Second, protocol.NewValue("w", "", time.Now()).String())
	deadline := float64(time.Now().Add(time.Minute).UnixMilli())
	rdb.ZAdd(ctx, protocol.WaitQueueKey(keys[1]), redisZ(1, entry))
	rdb.ZAdd(ctx, protocol.WaitPresenceKey(keys[1]), redisZ(deadline, entry))
	_, err := c.TryObtainMulti(ctx, keys, time.Second)
	if !errors.Is(err, ErrNotObtained) || !strings.Contains(err.Error(), "queued") {
		t.Fatalf("TryObtainMulti with a waiter queued on %s: %v, want ErrNotObtained (queued)", keys[1], err)
	}
	if rdb.Exists(ctx, keys[0]).Val() != 0 {
		t.Fatal("a refused TryObtainMulti took a key")
	}
	rdb.ZAdd(ctx, protocol.WaitPresenceKey(keys[1]), redisZ(1, entry)) // its presence ran out
	l, err := c.TryObtainMulti(ctx, keys, time.Second)
	if err != nil {
		t.Fatalf("with the waiter's presence run out: %v", err)
	}
	_ = l.Release(ctx)
}

// Arguments that cannot make a multi-key lock are refused with ErrInvalid before anything
// is sent.
func TestMultiInvalid(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	for name, call := range map[string]func() (*Lock, error){
		"no keys":      func() (*Lock, error) { return c.TryObtainMulti(ctx, nil, time.Second) },
		"a key twice":  func() (*Lock, error) { return c.ObtainMulti(ctx, []string{"lock:x", "lock:y", "lock:x"}, time.Second) },
		"an empty key": func() (*Lock, error) { return c.TryObtainMulti(ctx, []string{"lock:x", ""}, time.Second) },
		"a short ttl":  func() (*Lock, error) { return c.TryObtainMulti(ctx, []string{"lock:x"}, time.Microsecond) },
		"re-entrant": func() (*Lock, error) {
			return c.ObtainMulti(ctx, []string{"lock:x", "lock:y"}, time.Second, Reentrant("job"))
		},
	} {
		if l, err := call(); !errors.Is(err, ErrInvalid) || l != nil {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// A Ring shards by hash tag: keys with different tags may live on different servers.
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr, "b": "127.0.0.1:1"}})
	defer ring.Close()
	rc := New(ring)
	defer rc.Close()
	if _, err := rc.TryObtainMulti(ctx, []string{"lock:{o1}:a", "lock:{o2}:b"}, time.Second); !errors.Is(err, ErrCrossSlot) {
		t.Errorf("a Ring with keys of two hash tags: %v, want ErrCrossSlot", err)
	}
	rl, err := NewRedlock([]redis.UniversalClient{srv.Client(), srv.Client(), srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	if _, err := rl.TryObtainMulti(ctx, []string{"lock:x", "lock:y"}, time.Second); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "Redlock") {
		t.Errorf("Redlock: %v, want ErrInvalid (not supported on Redlock)", err)
	}
}

// A multi-key lock publishes one event per key, each with the shared value and "mode":"multi".
func TestMultiEvents(t *testing.T) {
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	ctx := testCtx(t, 10*time.Second)
	events := subscribeEvents(t, rdb)
	keys := []string{"lock:multi-events:a", "lock:multi-events:b"}
	l, err := c.ObtainMulti(ctx, keys, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 4 {
		e := events.next(t)
		if e.Mode != "multi" || e.Value != l.Value() || !slices.Contains(keys, e.Key) {
			t.Fatalf("event %+v: want mode multi, value %q, one of %v", e, l.Value(), keys)
		}
		if e.Type == string(EventAcquired) && e.Token != l.Token() {
			t.Fatalf("acquired event %+v: want token %d", e, l.Token())
		}
		seen[e.Type+" "+e.Key] = true
	}
	for _, key := range keys {
		if !seen["acquired "+key] || !seen["released "+key] {
			t.Fatalf("events %v: want acquired and released for %s", seen, key)
		}
	}
}

// checkCrossSlot is the cluster half of the multi-key lock (TestRedisCluster runs it): keys
// of one hash slot are taken together, keys of two are refused with a message that says how
// to hash-tag them, and locklib's slots are the cluster's.
func checkCrossSlot(t *testing.T, cluster *redistest.Cluster, c *Client) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	rdb := cluster.Client()
	defer rdb.Close()
	same := []string{"lock:{order-1001}:payment", "lock:{order-1001}:stock", "lock:{order-1001}:shipping"}
	l, err := c.ObtainMulti(ctx, same, time.Second, WithWatchdog())
	if err != nil {
		t.Fatalf("keys of one slot: %v", err)
	}
	if err := l.Refresh(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, key := range same {
		if v := rdb.Get(ctx, key).Val(); v != l.Value() {
			t.Fatalf("%s holds %q, want %q", key, v, l.Value())
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cross := []string{"lock:order:1001:payment", "lock:order:1001:stock"}
	_, err = c.TryObtainMulti(ctx, cross, time.Second)
	if !errors.Is(err, ErrCrossSlot) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("keys of two slots: %v, want ErrCrossSlot and ErrInvalid", err)
	}
	want := fmt.Sprintf(`locklib: invalid argument: keys in different Redis Cluster hash slots: `+
		`"lock:order:1001:payment" is in slot %d and "lock:order:1001:stock" in slot %d; a multi-key lock takes its keys in one script, `+
		`so they must share a slot: hash-tag the part that names the set, as lock:{order-1001}:payment and lock:{order-1001}:stock`,
		protocol.Slot(cross[0]), protocol.Slot(cross[1]))
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant\n%s", err, want)
	}
	for _, key := range append(same, cross...) {
		if slot := rdb.ClusterKeySlot(ctx, key).Val(); slot != int64(protocol.Slot(key)) {
			t.Fatalf("%s: the cluster says slot %d, protocol.Slot %d", key, slot, protocol.Slot(key))
		}
		if rdb.Exists(ctx, key).Val() != 0 {
			t.Fatalf("%s exists after its lock was released or refused", key)
		}
	}
	// protocol.Slot against the server's own CLUSTER KEYSLOT for random keys made mostly of
	// braces ("{}", "{{a}", "a}{b}", unclosed, empty) and bytes of every value.
	r := rand.New(rand.NewPCG(17, 2))
	keys := make([]string, 3000)
	for i := range keys {
		b := make([]byte, r.IntN(10))
		for j := range b {
			b[j] = "{}{}ab"[r.IntN(6)]
			if r.IntN(4) == 0 {
				b[j] = byte(r.IntN(256))
			}
		}
		keys[i] = string(b)
	}
	pipe := rdb.Pipeline()
	slots := make([]*redis.IntCmd, len(keys))
	for i, key := range keys {
		slots[i] = pipe.ClusterKeySlot(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, key := range keys {
		if got := protocol.Slot(key); int64(got) != slots[i].Val() {
			t.Fatalf("%q: the cluster says slot %d, protocol.Slot %d", key, slots[i].Val(), got)
		}
	}
}
