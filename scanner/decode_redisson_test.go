package scanner

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// redissonClient is the client id Redisson puts before every thread id.
const redissonClient = "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b"

// writeRedissonLayouts writes what Redisson 3.52.0 writes for its kinds of lock (as seen with
// the real client, /work/shared/peers/redisson/README.md), next to a locklib lock with its
// companions and locks of libraries whose waiters leave no trace. It returns the subscription
// that stands for a plain RLock's blocked lock().
func writeRedissonLayouts(ctx context.Context, t *testing.T, c *redis.Client) *redis.PubSub {
	t.Helper()
	owner := func(thread int) string { return redissonClient + ":" + strconv.Itoa(thread) }
	held := func(key string, fields ...any) {
		must(t, c.HSet(ctx, key, fields...).Err())
		must(t, c.PExpire(ctx, key, 30*time.Second).Err())
	}
	now := time.Now().UnixMilli()
	held("lock:r:plain", owner(61), "1")
	held("lock:r:fair", owner(63), "1")
	// Two queued: 64 waits, 65 gave up (its stale deadline has passed; Redisson drops it at
	// the next attempt).
	must(t, c.RPush(ctx, "redisson_lock_queue:{lock:r:fair}", owner(64), owner(65)).Err())
	must(t, c.ZAdd(ctx, "redisson_lock_timeout:{lock:r:fair}",
		redisZ(float64(now+330000), owner(64)), redisZ(float64(now-1000), owner(65))).Err())
	held("lock:r:rw-read", "mode", "read", owner(65), "1", owner(66), "1")
	for _, thread := range []int{65, 66} {
		must(t, c.Set(ctx, "{lock:r:rw-read}:"+owner(thread)+":rwlock_timeout:1", "1", 30*time.Second).Err())
	}
	held("lock:r:rw-write", "mode", "write", owner(67)+":write", "1")
	held("lock:r:fenced", owner(68), "2")
	must(t, c.Set(ctx, "redisson_lock_token:{lock:r:fenced}", "3", 0).Err())
	held("lock:r:waited", owner(69), "1")
	must(t, c.Set(ctx, "lock:r:psem", "2", 0).Err())
	must(t, c.ZAdd(ctx, "{lock:r:psem}:timeout", redisZ(float64(now+600000), "\x68\xb4\x8d\xe6")).Err())
	must(t, c.Set(ctx, "redisson_unlock_latch:{lock:r:plain}:0f3c", "1", time.Minute).Err())
	// Named like a semaphore's permits, but a lock of its own (a string).
	must(t, c.Set(ctx, "lock:{r}:timeout", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err())

	must(t, c.Set(ctx, "lock:seed", "api-1:-:1764400000123:0123456789abcdef", time.Minute).Err())
	must(t, c.Set(ctx, protocol.FenceKey("lock:seed"), "42", 0).Err())
	must(t, c.ZAdd(ctx, protocol.WaitQueueKey("lock:seed"), redisZ(1, "w")).Err())
	must(t, c.Set(ctx, "lock:redsync", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err())
	must(t, c.Set(ctx, "lock:bsm", "q83vEjRWeJCrze8SNFZ4kA"+`{"job":7}`, time.Minute).Err())
	must(t, c.Set(ctx, "lock:node-redlock", "0123456789abcdef0123456789abcdef", time.Minute).Err())

	// A plain RLock's waiter leaves no key: only its client's subscription.
	ps := c.Subscribe(ctx, "redisson_lock__channel:{lock:r:waited}")
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return ps
}

// redissonRows are the locks of writeRedissonLayouts: one row each, no companion.
var redissonRows = []string{"lock:r:plain", "lock:r:fair", "lock:r:rw-read", "lock:r:rw-write", "lock:r:fenced",
	"lock:r:waited", "lock:r:psem", "lock:{r}:timeout", "lock:seed", "lock:redsync", "lock:bsm", "lock:node-redlock"}

// TestRedissonLocksAsTheyAre: with the widest pattern, every lock is one row and its
// companions belong to it (Redisson's and locklib's); Redisson's fence is its RFencedLock
// token; waiters are the fair queue's live entries, the subscribers of a plain lock's
// channel, 0 where Redisson shows nobody waits, and unknown for libraries whose waiters poll.
func TestRedissonLocksAsTheyAre(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	writeRedissonLayouts(ctx, t, c)
	s := New(target, Options{Pattern: "*"})

	census, err := s.Census(ctx)
	must(t, err)
	checkRedissonRows(t, "census", census.Locks)
	got := byKey(t, census.Locks)
	wantWaiters := map[string]int{"lock:r:plain": 0, "lock:r:fair": 1, "lock:r:waited": 1, "lock:r:fenced": 0,
		"lock:r:rw-read": 0, "lock:r:rw-write": 0, "lock:seed": 1, "lock:r:psem": 0}
	for _, key := range redissonRows {
		l := got[key]
		want, known := wantWaiters[key]
		if l.HasWaiters != known || l.Waiters != want {
			t.Errorf("census %s: waiters %d known %v, want %d known %v", key, l.Waiters, l.HasWaiters, want, known)
		}
	}
	for _, key := range []string{"lock:r:rw-read", "lock:r:rw-write"} {
		if got[key].Format != FormatRedisson {
			t.Errorf("%s: format %s, want redisson", key, got[key].Format)
		}
	}
	if l := got["lock:r:fenced"]; !l.HasFence || l.Fence != 3 {
		t.Errorf("lock:r:fenced: fence %d/%v, want the RFencedLock token 3", l.Fence, l.HasFence)
	}
	if l := got["lock:seed"]; !l.HasFence || l.Fence != 42 {
		t.Errorf("lock:seed: fence %d/%v", l.Fence, l.HasFence)
	}

	// One key, as show reads it.
	for key, want := range map[string]int{"lock:r:fair": 1, "lock:r:waited": 1, "lock:r:plain": 0} {
		l, err := s.Get(ctx, key)
		must(t, err)
		if !l.HasWaiters || l.Waiters != want {
			t.Errorf("Get %s: waiters %d known %v, want %d", key, l.Waiters, l.HasWaiters, want)
		}
	}
	if l, err := s.Get(ctx, "lock:redsync"); err != nil || l.HasWaiters {
		t.Errorf("Get lock:redsync: waiters known %v (%v), want unknown", l.HasWaiters, err)
	}

	// The batch-by-batch census of ls: the same rows, the token as fence, no waiters read.
	var each []Lock
	_, err = s.CensusEach(ctx, func(locks []Lock) error { each = append(each, locks...); return nil })
	must(t, err)
	checkRedissonRows(t, "CensusEach", each)
	if l := byKey(t, each)["lock:r:fenced"]; !l.HasFence || l.Fence != 3 {
		t.Errorf("CensusEach lock:r:fenced: fence %d/%v, want 3", l.Fence, l.HasFence)
	}
}

func checkRedissonRows(t *testing.T, what string, locks []Lock) {
	t.Helper()
	got := byKey(t, locks)
	for _, key := range redissonRows {
		if _, ok := got[key]; !ok {
			t.Errorf("%s: no row for %s", what, key)
		}
	}
	if len(got) != len(redissonRows) {
		t.Errorf("%s: %d rows %v, want the %d locks and no companion", what, len(got), keysOf(got), len(redissonRows))
	}
}

func TestRedissonCompanionOf(t *testing.T) {
	tests := []struct{ key, lock string }{
		{"redisson_lock_token:{lock:a}", "lock:a"},
		{"redisson_lock_queue:{lock:a}", "lock:a"},
		{"redisson_lock_timeout:{lock:a}", "lock:a"},
		{"redisson_unlock_latch:{lock:a}:6d1f", "lock:a"},
		{"{lock:a}:" + redissonClient + ":65:rwlock_timeout:2", "lock:a"},
		// A name with a hash tag of its own is used as it is.
		{"redisson_lock_queue:lock:{a}", "lock:{a}"},
		{"lock:{a}:" + redissonClient + ":65:rwlock_timeout:1", "lock:{a}"},
		{"fence:{lock:a}", "lock:a"},
		{"waitq:{lock:a}", "lock:a"},
	}
	for _, tc := range tests {
		if lock, _, ok := companionOf(tc.key); !ok || lock != tc.lock {
			t.Errorf("companionOf(%q) = %q %v, want %q", tc.key, lock, ok, tc.lock)
		}
	}
	// A semaphore's permits ({lock:a}:timeout) are told by their type, once read (dropPermits).
	for _, key := range []string{"lock:a", "redisson_lock_queue:lock:a", "lock:a:timeout", "{lock:a}:x:rwlock_timeout:1", "{lock:a}",
		"{lock:a}:timeout", "lock:{a}:timeout"} {
		if lock, _, ok := companionOf(key); ok {
			t.Errorf("companionOf(%q) = %q, want no companion", key, lock)
		}
	}
	for key, sem := range map[string]string{"{lock:a}:timeout": "lock:a", "lock:{a}:timeout": "lock:{a}"} {
		if got, ok := redissonPermitsOf(key); !ok || got != sem {
			t.Errorf("redissonPermitsOf(%q) = %q %v, want %q", key, got, ok, sem)
		}
	}
}

// TestWatchTellsPermitsFromLocks: while watching, a semaphore's permits (a sorted set named
// {<name>}:timeout) that change stay out of the rows, and a lock merely named like them is one.
func TestWatchTellsPermitsFromLocks(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	must(t, c.Set(ctx, "lock:w:psem", "2", 0).Err())
	updates := New(target, Options{Pattern: "*", Interval: time.Hour}).Watch(ctx)
	waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))

	must(t, c.ZAdd(ctx, "{lock:w:psem}:timeout", redisZ(float64(time.Now().Add(time.Minute).UnixMilli()), "permit")).Err())
	must(t, c.Set(ctx, "lock:{w}:timeout", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err())
	must(t, c.Set(ctx, "lock:w:after", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err())
	rows := map[string]bool{}
	waitFor(t, updates, 5*time.Second, "the lock named like permits and the key set after", func(u Update) bool {
		for _, l := range u.Locks {
			rows[l.Key] = true
		}
		return rows["lock:{w}:timeout"] && rows["lock:w:after"]
	})
	if rows["{lock:w:psem}:timeout"] {
		t.Fatalf("the semaphore's permits are a row: %v", rows)
	}
}
