package actions

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// waitFor obtains key with c in the background (a waiter that polls rarely) and returns
// the outcome.
func waitFor(ctx context.Context, c *locklib.Client, key string) <-chan error {
	got := make(chan error, 1)
	go func() {
		l, err := c.Obtain(ctx, key, time.Minute)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	return got
}

// listen subscribes to pattern on c (a pattern subscription, so PUBSUB NUMSUB and CHANNELS
// still count only locklib's own subscribers) and returns it once Redis confirmed it.
func listen(t *testing.T, c *redis.Client, pattern string) *redis.PubSub {
	t.Helper()
	ps := c.PSubscribe(testCtx(t), pattern)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return ps
}

// forceRelease releases held's key on target as an operator would, then checks that the
// release published want on a channel starting with channelPrefix, and that the waiter got
// the lock. (Whether a locklib waiter acts on such a message is locklib's own tests' job;
// timing the waiter here could not tell a wake-up from a lucky back-off.)
func forceRelease(t *testing.T, target connect.Target, held *locklib.Lock, ps *redis.PubSub, channelPrefix string, want func(payload string) bool, waiter <-chan error) {
	t.Helper()
	res, err := New(target, Options{}).Release(testCtx(t), held.Key(), held.Value(), "stuck")
	if err != nil || res.Outcome != Released {
		t.Fatalf("force-release: %q %v", res.Outcome, err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("no wake-up published: %v", err)
	}
	if !strings.HasPrefix(msg.Channel, channelPrefix) || !want(msg.Payload) {
		t.Fatalf("published %q on %s", msg.Payload, msg.Channel)
	}
	if err := <-waiter; err != nil {
		t.Fatal(err)
	}
}

func TestForceReleaseWakesTheQueuedWaiter(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	holder, waiter := locklib.New(c), locklib.New(c, locklib.WithBackoff(time.Second, time.Second))
	defer holder.Close()
	defer waiter.Close()
	held, err := holder.Obtain(ctx, "lock:stuck", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ps := listen(t, c, protocol.WakeChannelPrefix+"*")
	got := waitFor(ctx, waiter, "lock:stuck")
	var queued []string
	redistest.Eventually(t, "the waiter in the queue", func() bool {
		queued, err = c.ZRange(ctx, protocol.WaitQueueKey("lock:stuck"), 0, -1).Result()
		return err == nil && len(queued) == 1
	})
	// The waiter id is "<client id>:<n>": the wake-up names that waiter and the key, on its
	// client's channel.
	waiterID, _, _, ok := protocol.ParseQueueEntry(queued[0])
	if !ok {
		t.Fatalf("queue entry %q", queued[0])
	}
	clientID, _, _ := strings.Cut(waiterID, ":")
	forceRelease(t, target, held, ps, protocol.WakeChannelPrefix+clientID,
		func(p string) bool { return p == waiterID+"\nlock:stuck" }, got)
}

// An operator whose ACL may read locklib's wait queue but not change it (ZRANGE and ZSCORE,
// no other sorted-set command) still wakes the first live waiter: the wake-up only reads the
// queue, passes over waiters whose presence deadline has passed, and leaves them in place.
func TestForceReleaseWakesWithReadOnlyQueueAccess(t *testing.T) {
	target, c, s := standalone(t)
	ctx := testCtx(t)
	a := adminAs(t, ctx, c, s, target, "queuereader", "~*", "&*", "+@all", "-@sortedset", "+zrange", "+zscore")
	key, queue, presence := "lock:ro", protocol.WaitQueueKey("lock:ro"), protocol.WaitPresenceKey("lock:ro")
	stale := protocol.QueueEntry("gone:1", time.Minute, lockValue)
	live := protocol.QueueEntry("live:7", time.Minute, lockValue)
	now := time.Now()
	c.ZAdd(ctx, queue, redis.Z{Score: 1, Member: stale}, redis.Z{Score: 2, Member: live})
	c.ZAdd(ctx, presence, redis.Z{Score: float64(now.Add(-time.Minute).UnixMilli()), Member: stale},
		redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: live})
	mustSet(t, c, key, lockValue, time.Minute)
	before := [2][]redis.Z{c.ZRangeWithScores(ctx, queue, 0, -1).Val(), c.ZRangeWithScores(ctx, presence, 0, -1).Val()}
	ps := listen(t, c, protocol.WakeChannelPrefix+"*")

	if res, err := a.Release(ctx, key, lockValue, "stuck"); err != nil || res.Outcome != Released {
		t.Fatalf("force-release: %q %v", res.Outcome, err)
	}
	wakeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(wakeCtx)
	if err != nil {
		t.Fatalf("no wake-up published: %v", err)
	}
	if msg.Channel != protocol.WakeChannelPrefix+"live" || msg.Payload != "live:7\n"+key {
		t.Fatalf("published %q on %s, want the live waiter woken", msg.Payload, msg.Channel)
	}
	after := [2][]redis.Z{c.ZRangeWithScores(ctx, queue, 0, -1).Val(), c.ZRangeWithScores(ctx, presence, 0, -1).Val()}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the queue changed: %v, then %v", before, after)
	}
}

// An operator whose ACL covers locklib's wait-queue keys but not Redisson's (Redis refuses a
// script that names a key the user may not write) still wakes locklib's waiters.
func TestForceReleaseWakesLocklibWaitersWithoutRedissonKeyAccess(t *testing.T) {
	target, c, s := standalone(t)
	ctx := testCtx(t)
	a := adminAs(t, ctx, c, s, target, "locklibonly", "~lock:*", "~lockscope:*", "~waitq:*", "~waitp:*", "~levels:*", "&*", "+@all")
	key := "lock:locklibonly"
	live := protocol.QueueEntry("live:7", time.Minute, lockValue)
	c.ZAdd(ctx, protocol.WaitQueueKey(key), redis.Z{Score: 1, Member: live})
	c.ZAdd(ctx, protocol.WaitPresenceKey(key), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: live})
	mustSet(t, c, key, lockValue, time.Minute)
	ps := listen(t, c, protocol.WakeChannelPrefix+"*")

	if res, err := a.Release(ctx, key, lockValue, "stuck"); err != nil || res.Outcome != Released {
		t.Fatalf("force-release: %q %v", res.Outcome, err)
	}
	wakeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if msg, err := ps.ReceiveMessage(wakeCtx); err != nil || msg.Payload != "live:7\n"+key {
		t.Fatalf("wake-up: %v %v, want the queued waiter woken", msg, err)
	}
}

func TestForceReleaseWakesRedlockWaiters(t *testing.T) {
	target, clients, _ := redlock(t, 3)
	ctx := testCtx(t)
	universal := make([]redis.UniversalClient, len(clients))
	for i, c := range clients {
		universal[i] = c
	}
	holder, err := locklib.NewRedlock(universal)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := locklib.NewRedlock(universal, locklib.WithBackoff(time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	held, err := holder.Obtain(ctx, "lock:rl:stuck", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ps := listen(t, clients[0], protocol.RedlockReleasedChannel)
	got := waitFor(ctx, waiter, "lock:rl:stuck")
	forceRelease(t, target, held, ps, protocol.RedlockReleasedChannel,
		func(p string) bool { return p == "lock:rl:stuck\n"+held.Value() }, got)
}

// The wake-up is a hint: an operator whose ACL covers lock:* but not the wait-queue keys
// (Redis refuses a script that names them, so the release runs again without them), or who
// may not run ZRANGE or PUBLISH (refused inside the script, caught there), still releases.
func TestForceReleaseWithoutWakeUpPermissions(t *testing.T) {
	target, c, s := standalone(t)
	ctx := testCtx(t)
	for user, rules := range map[string][]any{
		"locksonly": {"~lock:*", "~lockscope:*", "&*", "+@all"},
		"nopublish": {"~*", "&*", "+@all", "-publish"},
		"nozrange":  {"~*", "&*", "+@all", "-zrange"},
	} {
		a := adminAs(t, ctx, c, s, target, user, rules...)
		mustSet(t, c, "lock:acl", lockValue, time.Minute)
		if res, err := a.Release(ctx, "lock:acl", lockValue, ""); err != nil || res.Outcome != Released {
			t.Errorf("%s: release %q %v, want released", user, res.Outcome, err)
		}
		if _, ok := redistest.Value(t, c, "lock:acl"); ok {
			t.Errorf("%s: key still there", user)
		}
	}
}

// A force-release of a Redisson lock tells its waiters as Redisson's own unlock does
// (3.52.0): UNLOCK_MESSAGE 0 on the lock's channel, and for an RFairLock on the channel of
// the first queued waiter whose stale deadline has not passed; READ_UNLOCK_MESSAGE 1 on an
// RReadWriteLock's channel. Each goes out with PUBLISH and SPUBLISH (sharded subscribers).
// The queue is only read. (TestRedissonPeer in cli times a real Redisson waiter.)
func TestForceReleaseWakesRedissonWaiters(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	const client = "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b"
	now := time.Now().UnixMilli()
	tests := []struct {
		name      string
		fields    map[string]string
		queue     []redis.Z // RFairLock waiters and their stale deadlines
		channels  []string  // where the release must publish, and each gets
		message   string
		sharded   string // the channel a sharded subscriber listens on
		untouched []string
	}{
		{name: "lock:r:plain", fields: map[string]string{client + ":61": "1"},
			channels: []string{"redisson_lock__channel:{lock:r:plain}"}, message: "0",
			sharded: "redisson_lock__channel:{lock:r:plain}"},
		{name: "lock:r:fair", fields: map[string]string{client + ":63": "1"},
			queue:    []redis.Z{{Score: float64(now - 1000), Member: client + ":64"}, {Score: float64(now + 330000), Member: client + ":65"}},
			channels: []string{"redisson_lock__channel:{lock:r:fair}:" + client + ":65", "redisson_lock__channel:{lock:r:fair}"},
			message:  "0", sharded: "redisson_lock__channel:{lock:r:fair}:" + client + ":65",
			untouched: []string{"redisson_lock_queue:{lock:r:fair}", "redisson_lock_timeout:{lock:r:fair}"}},
		{name: "lock:{r}:rw", fields: map[string]string{"mode": "write", client + ":67:write": "1"},
			channels: []string{"redisson_rwlock:lock:{r}:rw"}, message: "1", sharded: "redisson_rwlock:lock:{r}:rw"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.HSet(ctx, tc.name, tc.fields).Err(); err != nil {
				t.Fatal(err)
			}
			for _, z := range tc.queue {
				c.RPush(ctx, "redisson_lock_queue:{"+tc.name+"}", z.Member)
				c.ZAdd(ctx, "redisson_lock_timeout:{"+tc.name+"}", z)
			}
			before := map[string]any{}
			for _, k := range tc.untouched {
				before[k] = c.Dump(ctx, k).Val()
			}
			ps := c.Subscribe(ctx, tc.channels...)
			defer ps.Close()
			sps := c.SSubscribe(ctx, tc.sharded)
			defer sps.Close()
			for range tc.channels {
				if _, err := ps.Receive(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := sps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			res, err := New(target, Options{}).Release(ctx, tc.name, CanonicalHash(tc.fields), "stuck")
			if err != nil || res.Outcome != Released {
				t.Fatalf("force-release: %q %v", res.Outcome, err)
			}
			wakeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			heard := map[string]string{}
			for range tc.channels {
				msg, err := ps.ReceiveMessage(wakeCtx)
				if err != nil {
					t.Fatalf("heard %v, then nothing: %v", heard, err)
				}
				heard[msg.Channel] = msg.Payload
			}
			for _, ch := range tc.channels {
				if heard[ch] != tc.message {
					t.Errorf("%s: heard %q, want %q (all: %v)", ch, heard[ch], tc.message, heard)
				}
			}
			if msg, err := sps.ReceiveMessage(wakeCtx); err != nil || msg.Payload != tc.message {
				t.Errorf("sharded %s: %v %v, want %q", tc.sharded, msg, err, tc.message)
			}
			for k, dump := range before {
				if c.Dump(ctx, k).Val() != dump {
					t.Errorf("%s changed", k)
				}
			}
		})
	}
}

// A key of another type where a Redisson lock's fair queue would be (anyone may write one)
// does not keep the lock's plain waiters from being told.
func TestForceReleaseWakesRedissonWaitersDespiteAMistypedQueue(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	const key, owner = "lock:r:mistyped", "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:61"
	if err := c.HSet(ctx, key, owner, "1").Err(); err != nil {
		t.Fatal(err)
	}
	mustSet(t, c, "redisson_lock_queue:{"+key+"}", "not a list", time.Minute)
	ps := listen(t, c, "redisson_lock__channel:{"+key+"}")
	res, err := New(target, Options{}).Release(ctx, key, CanonicalHash(map[string]string{owner: "1"}), "stuck")
	if err != nil || res.Outcome != Released {
		t.Fatalf("force-release: %q %v", res.Outcome, err)
	}
	wakeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if msg, err := ps.ReceiveMessage(wakeCtx); err != nil || msg.Payload != "0" {
		t.Errorf("the lock's channel: %v %v, want 0", msg, err)
	}
}

// On a cluster the wake-up reaches Redisson's waiters whichever Pub/Sub they chose: SPUBLISH
// for those subscribed with SSUBSCRIBE (sharded, on the slot's master: the channel is in the
// lock's slot), PUBLISH for the others, which the cluster forwards to every node. A key whose
// waiters' keys would be in another slot (a brace but no hash tag) is still released: Redis
// refuses a script whose keys span slots, so those keys are not named.
func TestForceReleaseWakesRedissonWaitersOnACluster(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client()
	defer cc.Close()
	ctx := testCtx(t)
	const key, owner = "lock:r:plain", "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:61"
	channel := "redisson_lock__channel:{" + key + "}"
	if err := cc.HSet(ctx, key, owner, "1").Err(); err != nil {
		t.Fatal(err)
	}
	sharded := cc.SSubscribe(ctx, channel)
	defer sharded.Close()
	// A plain subscriber on a master that does not hold the key.
	holder, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var other *redis.Client
	for _, addr := range cl.Addrs {
		if addr != holder.Options().Addr {
			other = redis.NewClient(&redis.Options{Addr: addr})
			break
		}
	}
	defer other.Close()
	plain := other.Subscribe(ctx, channel)
	defer plain.Close()
	for _, ps := range []*redis.PubSub{sharded, plain} {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	target := connect.Target{Mode: connect.Cluster, Clients: []redis.UniversalClient{cc}, Addrs: cl.Addrs[:1]}
	res, err := New(target, Options{}).Release(ctx, key, CanonicalHash(map[string]string{owner: "1"}), "stuck")
	if err != nil || res.Outcome != Released {
		t.Fatalf("force-release: %q %v", res.Outcome, err)
	}
	wakeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for name, ps := range map[string]*redis.PubSub{"sharded": sharded, "plain": plain} {
		if msg, err := ps.ReceiveMessage(wakeCtx); err != nil || msg.Channel != channel || msg.Payload != "0" {
			t.Errorf("%s subscriber: %v %v, want 0 on %s", name, msg, err, channel)
		}
	}

	for _, key := range []string{"lock:{open", "lock:{}empty", "lock:}close"} {
		if err := cc.Set(ctx, key, lockValue, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		// Extend names only the companions in key's slot too.
		if res, err := New(target, Options{}).Extend(ctx, key, lockValue, 2*time.Minute, "slow"); err != nil || res.Outcome != Extended {
			t.Errorf("extend %s: %q %v, want extended", key, res.Outcome, err)
		}
		if res, err := New(target, Options{}).Release(ctx, key, lockValue, "stuck"); err != nil || res.Outcome != Released {
			t.Errorf("force-release %s: %q %v, want released", key, res.Outcome, err)
		}
	}
}
