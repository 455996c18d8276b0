package actions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

// leaseMember is a lease set member of owner (its rand) in mode, for operation op.
func leaseMember(mode protocol.Mode, op, owner string) string {
	return protocol.LeaseMember{Mode: mode, Op: "6f1c0a9e3b2d4c51:" + op,
		Value: protocol.Value{Node: "api-" + op, Trace: "t" + op, AcquiredAt: time.UnixMilli(1764489600123), Rand: owner}}.String()
}

const (
	ownerA = "aaaaaaaaaaaaaaaa"
	ownerB = "bbbbbbbbbbbbbbbb"
	ownerC = "cccccccccccccccc"
)

// zaddIn adds member to key with a deadline in from now (negative: expired).
func zaddIn(t *testing.T, c *redis.Client, key, member string, in time.Duration) {
	t.Helper()
	if err := c.ZAdd(context.Background(), key, redis.Z{Score: float64(time.Now().Add(in).UnixMilli()), Member: member}).Err(); err != nil {
		t.Fatal(err)
	}
}

// seenHolder is a holder as PeekHolders read it, with the seen text its release compares.
type seenHolder struct {
	scanner.SharedHolder
	Seen string
}

// holderOf finds live holder id of key as PeekHolders reads it.
func holderOf(t *testing.T, a *Admin, key, id string) seenHolder {
	t.Helper()
	l, err := a.PeekHolders(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := LiveHolder(&l, id)
	if !ok {
		t.Fatalf("%s: no holder %s among %+v", key, id, l.Shared.Holders)
	}
	seen, err := SeenFor(&l, h)
	if err != nil {
		t.Fatal(err)
	}
	return seenHolder{h, seen}
}

// A reader with two levels is removed whole; the other reader, and nothing else, stays; the
// expired member is pruned; the key lives to the remaining reader's deadline. Then the last
// holder's release deletes the key. Each release is audited with the holder's id.
func TestReleaseHolderOfALeaseSet(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "alice@ops"})
	const key = "lock:doc:7"
	a1, a2 := leaseMember(protocol.ModeRead, "1", ownerA), leaseMember(protocol.ModeRead, "2", ownerA)
	b := leaseMember(protocol.ModeRead, "3", ownerB)
	zaddIn(t, c, key, a1, 50*time.Second)
	zaddIn(t, c, key, a2, 90*time.Second)
	zaddIn(t, c, key, b, 20*time.Second)
	zaddIn(t, c, key, leaseMember(protocol.ModeRead, "4", ownerC), -time.Second)
	c.PExpire(ctx, key, 90*time.Second)

	h := holderOf(t, a, key, ownerA)
	if h.Mode != protocol.ModeRead || h.Count != 2 || h.Seen != strings.Join(slices.Sorted(slices.Values([]string{a1, a2})), "\n") ||
		h.TTL < 80*time.Second || h.Node != "api-1" {
		t.Fatalf("holder A = %+v", h)
	}

	res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, "stuck reader")
	if err != nil || res.Outcome != Released {
		t.Fatalf("release A: %q %v", res.Outcome, err)
	}
	left := c.ZRange(ctx, key, 0, -1).Val()
	if !slices.Equal(left, []string{b}) {
		t.Fatalf("left %q, want B's member alone", left)
	}
	if pttl := c.PTTL(ctx, key).Val(); pttl > 20*time.Second || pttl < 15*time.Second {
		t.Fatalf("PTTL %v, want B's deadline (20s)", pttl)
	}

	hb := holderOf(t, a, key, ownerB)
	if res, err := a.ReleaseHolder(ctx, key, hb.ID, hb.Seen, "last"); err != nil || res.Outcome != Released {
		t.Fatalf("release B: %q %v", res.Outcome, err)
	}
	if n := c.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the key outlived its last holder")
	}

	recs, err := a.Audit(ctx, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records %v", len(recs), err)
	}
	if r := recs[1]; r.Action != ActionReleaseHolder || r.Holder != ownerA || r.Seen != h.Seen || r.Result != Released ||
		r.Reason != "stuck reader" || r.Key != key || r.Operator != "alice@ops" {
		t.Fatalf("record %+v", r)
	}
}

// Between the operator's read and the release the holder renews (only its deadlines change:
// still the holder seen, released), takes another level or releases itself (refused: nothing
// of anyone removed), or another owner comes and goes: never touched.
func TestReleaseHolderRaces(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	a1, b := leaseMember(protocol.ModeRead, "1", ownerA), leaseMember(protocol.ModeRead, "3", ownerB)
	setUp := func(key string) seenHolder {
		c.Del(ctx, key)
		zaddIn(t, c, key, a1, 30*time.Second)
		zaddIn(t, c, key, b, 30*time.Second)
		return holderOf(t, a, key, ownerA)
	}
	tests := []struct {
		name    string
		between func(key string)
		want    Outcome
		left    []string
	}{
		{"renewed", func(key string) { zaddIn(t, c, key, a1, time.Minute) }, Released, []string{b}},
		{"re-entered", func(key string) { zaddIn(t, c, key, leaseMember(protocol.ModeRead, "2", ownerA), time.Minute) }, ChangedHands,
			[]string{a1, b, leaseMember(protocol.ModeRead, "2", ownerA)}},
		{"released itself", func(key string) { c.ZRem(ctx, key, a1) }, AlreadyGone, []string{b}},
		{"expired", func(key string) { zaddIn(t, c, key, a1, -time.Millisecond) }, AlreadyGone, []string{b}},
		{"key gone, another set in its place", func(key string) { c.Del(ctx, key); zaddIn(t, c, key, b, time.Minute) }, AlreadyGone, []string{b}},
		{"a plain lock in its place", func(key string) { c.Del(ctx, key); c.Set(ctx, key, lockValue, time.Minute) }, NotALock, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "lock:race:" + tc.name
			h := setUp(key)
			tc.between(key)
			res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, "")
			if err != nil || res.Outcome != tc.want {
				t.Fatalf("%q %v, want %q", res.Outcome, err, tc.want)
			}
			if tc.left == nil {
				if v := c.Get(ctx, key).Val(); v != lockValue {
					t.Fatalf("the plain lock was touched: %q", v)
				}
				return
			}
			if got := c.ZRange(ctx, key, 0, -1).Val(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.left))) {
				t.Fatalf("left %q, want %q", got, tc.left)
			}
		})
	}
}

// Releasing a lease set holder wakes the first live waiter, as a release does.
func TestReleaseHolderWakesTheLiveHead(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	const key, waiter = "lock:pool", "9a8b7c6d5e4f3a2b:4"
	p := leaseMember(protocol.ModePermit, "1", ownerA)
	zaddIn(t, c, key, p, time.Minute)
	stale, live := "0123456789abcdef:1|30000|p|"+strings.SplitN(p, "|", 3)[2], waiter+"|30000|p|w-2:-:1764489600123:fedcba9876543210"
	c.ZAdd(ctx, protocol.WaitQueueKey(key), redis.Z{Score: 1, Member: stale}, redis.Z{Score: 2, Member: live})
	c.ZAdd(ctx, protocol.WaitPresenceKey(key), redis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: stale},
		redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: live})
	ps := listen(t, c, protocol.WakeChannelPrefix+"*")

	h := holderOf(t, New(target, Options{}), key, ownerA)
	if h.Mode != protocol.ModePermit {
		t.Fatalf("holder %+v, want a permit", h)
	}
	if res, err := New(target, Options{}).ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != Released {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	wake, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(wake)
	if err != nil || msg.Channel != protocol.WakeChannelPrefix+"9a8b7c6d5e4f3a2b" || msg.Payload != waiter+"\n"+key {
		t.Fatalf("wake-up %v %v", msg, err)
	}
}

// A holder and seen text that do not belong together are refused before anything is sent;
// in read-only mode nothing is sent at all; a plain lock, a list and a Redisson RSemaphore have
// no holders to name.
func TestReleaseHolderRefusals(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	for _, tc := range []struct{ id, seen string }{
		{ownerB, leaseMember(protocol.ModeRead, "1", ownerA)},
		{ownerA, "r|nope"},
		{"6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:65", "hash{6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:66=1,mode=read}"},
		{"6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:65", "hash{6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b:65=1,mode=write}"},
		{"68b48de6cd392916141d807d6e4552b4", "68b48de6cd392916141d807d6e4552b5 1796078230676"},
	} {
		if _, err := a.ReleaseHolder(ctx, "lock:x", tc.id, tc.seen, ""); !errors.Is(err, ErrBadRequest) {
			t.Errorf("holder %s seen %q: %v, want ErrBadRequest", tc.id, tc.seen, err)
		}
	}
	if _, err := New(target, Options{ReadOnly: true}).ReleaseHolder(ctx, "lock:x", ownerA, leaseMember(protocol.ModeRead, "1", ownerA), ""); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
	if n := len(auditEntries(t, c)); n != 0 {
		t.Errorf("%d audit records of requests never sent", n)
	}

	mustSet(t, c, "lock:plain", lockValue, time.Minute)
	c.RPush(ctx, "lock:list", "x")
	mustSet(t, c, "lock:redisson:sem", "3", 0)
	for key, want := range map[string]error{"lock:plain": ErrNotShared, "lock:list": ErrNotShared, "lock:none": ErrNoKey, "lock:redisson:sem": ErrNoHolders} {
		l, err := a.PeekHolders(ctx, key)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", key, err, want)
		}
		if key == "lock:redisson:sem" && (l.Kind() != scanner.KindSemaphore || l.Shared.Available != 3) {
			t.Errorf("%s: %+v, want an RSemaphore with 3 available", key, l.Shared)
		}
	}
}

const redissonClient = "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b"

// receiveWithin is the next message on ps, or an error after d. (A deadline on ReceiveMessage
// would break the connection, and the messages after it.)
func receiveWithin(ps *redis.PubSub, d time.Duration) (*redis.Message, error) {
	select {
	case msg := <-ps.Channel():
		return msg, nil
	case <-time.After(d):
		return nil, errors.New("no message within " + d.String())
	}
}

// A Redisson read lock's reader goes with its levels' keys, the other reader stays, the hash
// lives as long as the other's levels; the last reader's release deletes the hash and tells
// Redisson's waiters on the read-write lock's channel; a reader that re-entered meanwhile is
// left alone. (TestReleaseHolderRedissonPeer: the same against a real Redisson.)
func TestReleaseHolderOfARedissonReadLock(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	const key = "lock:r:rw-read"
	r65, r66 := redissonClient+":65", redissonClient+":66"
	c.HSet(ctx, key, "mode", "read", r65, "2", r66, "1")
	c.PExpire(ctx, key, 30*time.Second)
	level := func(owner string, n int) string {
		return "{" + key + "}:" + owner + ":rwlock_timeout:" + string(rune('0'+n))
	}
	mustSet(t, c, level(r65, 1), "1", 30*time.Second)
	mustSet(t, c, level(r65, 2), "1", 25*time.Second)
	mustSet(t, c, level(r66, 1), "1", 10*time.Second)
	ps := c.Subscribe(ctx, "redisson_rwlock:{"+key+"}")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	h := holderOf(t, a, key, r65)
	if h.Mode != protocol.ModeRead || h.Count != 2 || h.TTL < 25*time.Second || h.Seen != "hash{"+r65+"=2,mode=read}" {
		t.Fatalf("reader 65 = %+v", h)
	}
	c.HSet(ctx, key, r65, "3") // re-entered after the read: refused
	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != ChangedHands || res.Current != "hash{"+r65+"=3,mode=read}" {
		t.Fatalf("after a re-entry: %+v %v", res, err)
	}
	c.HSet(ctx, key, r65, "2")

	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != Released {
		t.Fatalf("release 65: %q %v", res.Outcome, err)
	}
	if got := c.HGetAll(ctx, key).Val(); len(got) != 2 || got[r66] != "1" || got["mode"] != "read" {
		t.Fatalf("hash now %v, want reader 66 alone", got)
	}
	if n := c.Exists(ctx, level(r65, 1), level(r65, 2), level(r66, 1)).Val(); n != 1 {
		t.Fatalf("%d level keys left, want 66's alone", n)
	}
	if pttl := c.PTTL(ctx, key).Val(); pttl > 10*time.Second || pttl < 5*time.Second {
		t.Fatalf("hash PTTL %v, want reader 66's (10s)", pttl)
	}
	if msg, err := receiveWithin(ps, 200*time.Millisecond); err == nil {
		t.Fatalf("published %q while a reader still holds", msg.Payload)
	}

	h = holderOf(t, a, key, r66)
	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != Released {
		t.Fatalf("release 66: %q %v", res.Outcome, err)
	}
	if n := c.Exists(ctx, key, level(r66, 1)).Val(); n != 0 {
		t.Fatal("the hash or a level outlived the last reader")
	}
	if msg, err := receiveWithin(ps, 5*time.Second); err != nil || msg.Payload != "1" {
		t.Fatalf("waiters told %v %v, want 1 on the read-write lock's channel", msg, err)
	}
}

func TestReleaseHolderOfARedissonWriteLock(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	const key = "lock:{r}:rw-write"
	w := redissonClient + ":67"
	c.HSet(ctx, key, "mode", "write", w+":write", "1")
	ps := c.Subscribe(ctx, "redisson_rwlock:"+key)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	h := holderOf(t, a, key, w)
	if h.Mode != protocol.ModeWrite || h.Count != 1 || h.Seen != "hash{"+w+":write=1,mode=write}" {
		t.Fatalf("writer = %+v", h)
	}
	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != Released {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	if c.Exists(ctx, key).Val() != 0 {
		t.Fatal("the write lock is still there")
	}
	if msg, err := receiveWithin(ps, 5*time.Second); err != nil || msg.Payload != "1" {
		t.Fatalf("waiters told %v %v", msg, err)
	}
}

// A Redisson permit goes back to the permits available, and the semaphore's waiters hear the
// new count, as RPermitExpirableSemaphore.release does; the other permit stays, and a permit
// whose deadline changed since the read is refused.
func TestReleaseHolderOfARedissonPermit(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	const key, permits = "lock:r:psem", "{lock:r:psem}:timeout"
	mine, other := "\x68\xb4\x8d\xe6\xcd\x39\x29\x16\x14\x1d\x80\x7d\x6e\x45\x52\xb4", "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
	mustSet(t, c, key, "1", 0)
	zaddIn(t, c, permits, mine, 10*time.Minute)
	zaddIn(t, c, permits, other, 10*time.Minute)
	ps := c.Subscribe(ctx, "redisson_sc:{"+key+"}")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := a.PeekHolders(ctx, key)
	if err != nil || l.Kind() != scanner.KindPermitSemaphore || l.Shared.Available != 1 || len(l.Shared.Holders) != 2 {
		t.Fatalf("%+v %v", l.Shared, err)
	}
	h := holderOf(t, a, key, "68b48de6cd392916141d807d6e4552b4")
	if h.Mode != protocol.ModePermit || h.TTL < 9*time.Minute || !strings.HasPrefix(h.Seen, h.ID+" ") {
		t.Fatalf("permit %+v", h)
	}

	c.ZAddXX(ctx, permits, redis.Z{Score: float64(time.Now().Add(20 * time.Minute).UnixMilli()), Member: mine})
	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != ChangedHands {
		t.Fatalf("a permit with another deadline: %q %v", res.Outcome, err)
	}
	h = holderOf(t, a, key, h.ID)
	if res, err := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); err != nil || res.Outcome != Released {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	if got := c.ZRange(ctx, permits, 0, -1).Val(); !slices.Equal(got, []string{other}) {
		t.Fatalf("permits left %q", got)
	}
	if v := c.Get(ctx, key).Val(); v != "2" {
		t.Fatalf("available %s, want 2", v)
	}
	if msg, err := receiveWithin(ps, 5*time.Second); err != nil || msg.Payload != "2" {
		t.Fatalf("waiters told %v %v, want the count available, 2", msg, err)
	}
	if res, _ := a.ReleaseHolder(ctx, key, h.ID, h.Seen, ""); res.Outcome != AlreadyGone || c.Get(ctx, key).Val() != "2" {
		t.Fatalf("a second release: %q, available %s", res.Outcome, c.Get(ctx, key).Val())
	}
}

// censusLock is key as the scanner reads it (the console's record).
func censusLock(t *testing.T, target connect.Target, key string) *scanner.Lock {
	t.Helper()
	c, err := scanner.New(target, scanner.Options{Pattern: key}).Census(testCtx(t))
	if err != nil || len(c.Locks) != 1 {
		t.Fatalf("census of %s: %d locks %v", key, len(c.Locks), err)
	}
	return &c.Locks[0]
}

// What the console saw of a holder (a scanner record) is what its release compares: a lease
// set owner in every mode (a writer holding read levels too is released whole), a Redisson
// reader and writer, a Redisson permit. The seen text is refused once the holder changed.
func TestSeenForTheCensus(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{})
	w1, r1 := leaseMember(protocol.ModeWrite, "1", ownerA), leaseMember(protocol.ModeRead, "2", ownerA)
	zaddIn(t, c, "lock:doc", w1, 30*time.Second)
	zaddIn(t, c, "lock:doc", r1, 40*time.Second)
	zaddIn(t, c, "lock:doc", leaseMember(protocol.ModeRead, "3", ownerB), -time.Second) // expired: no level
	w := redissonClient + ":67"
	c.HSet(ctx, "lock:r:rw", "mode", "write", w+":write", "1", w, "2")
	c.PExpire(ctx, "lock:r:rw", 30*time.Second)
	mustSet(t, c, "lock:r:psem", "2", 0)
	permit := "\x68\xb4\x8d\xe6\xcd\x39\x29\x16\x14\x1d\x80\x7d\x6e\x45\x52\xb4"
	zaddIn(t, c, "{lock:r:psem}:timeout", permit, 10*time.Minute)
	mustSet(t, c, "lock:r:sem", "3", 0)

	for _, key := range []string{"lock:doc", "lock:r:rw", "lock:r:psem"} {
		l := censusLock(t, target, key)
		if l.Shared == nil || len(l.Shared.Holders) == 0 {
			t.Fatalf("%s: census %+v", key, l)
		}
		live := slices.IndexFunc(l.Shared.Holders, func(h scanner.SharedHolder) bool { return !h.Expired })
		h := l.Shared.Holders[live]
		if dead := slices.IndexFunc(l.Shared.Holders, func(h scanner.SharedHolder) bool { return h.Expired }); dead >= 0 {
			if _, err := SeenFor(l, l.Shared.Holders[dead]); !errors.Is(err, ErrInexactValue) {
				t.Errorf("%s: the expired holder: %v, want ErrInexactValue", key, err)
			}
		} else if key == "lock:doc" {
			t.Errorf("%s: no expired holder in %+v", key, l.Shared.Holders)
		}
		seen, err := SeenFor(l, h)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if peek := holderOf(t, a, key, h.ID); peek.Seen != seen {
			t.Errorf("%s: the census's seen %q, PeekHolders' %q", key, seen, peek.Seen)
		}
		if res, err := a.ReleaseHolder(ctx, key, h.ID, seen, ""); err != nil || res.Outcome != Released {
			t.Fatalf("%s: %q %v", key, res.Outcome, err)
		}
	}
	if n := c.Exists(ctx, "lock:doc", "lock:r:rw").Val(); n != 0 {
		t.Fatalf("%d of the released keys left", n)
	}
	if _, err := SeenFor(censusLock(t, target, "lock:r:sem"), scanner.SharedHolder{}); !errors.Is(err, ErrNoHolders) {
		t.Fatalf("RSemaphore: %v", err)
	}
}

// ExtendHolder raises one holder's leases to the TTL (the key follows its latest lease), never
// lowers them, leaves the other holders as they are, and refuses a holder that changed.
func TestExtendHolder(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "alice@ops"})
	a1, b := leaseMember(protocol.ModeRead, "1", ownerA), leaseMember(protocol.ModeRead, "2", ownerB)
	zaddIn(t, c, "lock:doc", a1, 10*time.Second)
	zaddIn(t, c, "lock:doc", b, 20*time.Second)
	c.PExpire(ctx, "lock:doc", 20*time.Second)
	bBefore := c.ZScore(ctx, "lock:doc", b).Val()

	h := holderOf(t, a, "lock:doc", ownerA)
	res, err := a.ExtendHolder(ctx, "lock:doc", h.ID, h.Seen, time.Minute, "deploy")
	if err != nil || res.Outcome != Extended {
		t.Fatalf("%q %v", res.Outcome, err)
	}
	if left := time.Until(time.UnixMilli(int64(c.ZScore(ctx, "lock:doc", a1).Val()))); left < 55*time.Second {
		t.Fatalf("A's lease has %v left, want about a minute", left)
	}
	if c.ZScore(ctx, "lock:doc", b).Val() != bBefore {
		t.Fatal("B's lease was touched")
	}
	if pttl := c.PTTL(ctx, "lock:doc").Val(); pttl < 55*time.Second {
		t.Fatalf("key PTTL %v, want A's new deadline", pttl)
	}
	if res, _ := a.ExtendHolder(ctx, "lock:doc", h.ID, h.Seen, 10*time.Second, ""); res.Outcome != WouldShorten || res.TTLLeft < 50*time.Second {
		t.Fatalf("a shorter TTL: %q %v, want would_shorten with A's time left", res.Outcome, res.TTLLeft)
	}
	zaddIn(t, c, "lock:doc", leaseMember(protocol.ModeRead, "3", ownerA), time.Second) // A re-entered
	if res, _ := a.ExtendHolder(ctx, "lock:doc", h.ID, h.Seen, 2*time.Minute, ""); res.Outcome != ChangedHands {
		t.Fatalf("after a re-entry: %q", res.Outcome)
	}

	// A Redisson reader: its levels' keys and the hash; a permit: its deadline.
	r := redissonClient + ":65"
	c.HSet(ctx, "lock:r:rw", "mode", "read", r, "1")
	c.PExpire(ctx, "lock:r:rw", 5*time.Second)
	mustSet(t, c, "{lock:r:rw}:"+r+":rwlock_timeout:1", "1", 5*time.Second)
	hr := holderOf(t, a, "lock:r:rw", r)
	if res, err := a.ExtendHolder(ctx, "lock:r:rw", hr.ID, hr.Seen, time.Minute, ""); err != nil || res.Outcome != Extended {
		t.Fatalf("Redisson reader: %q %v", res.Outcome, err)
	}
	for _, k := range []string{"lock:r:rw", "{lock:r:rw}:" + r + ":rwlock_timeout:1"} {
		if pttl := c.PTTL(ctx, k).Val(); pttl < 55*time.Second {
			t.Fatalf("%s PTTL %v after the extend", k, pttl)
		}
	}
	mustSet(t, c, "lock:r:psem", "2", 0)
	zaddIn(t, c, "{lock:r:psem}:timeout", "\x68\xb4\x8d\xe6\xcd\x39\x29\x16\x14\x1d\x80\x7d\x6e\x45\x52\xb4", 5*time.Second)
	hp := holderOf(t, a, "lock:r:psem", "68b48de6cd392916141d807d6e4552b4")
	if res, err := a.ExtendHolder(ctx, "lock:r:psem", hp.ID, hp.Seen, time.Minute, ""); err != nil || res.Outcome != Extended {
		t.Fatalf("permit: %q %v", res.Outcome, err)
	}
	if hp2 := holderOf(t, a, "lock:r:psem", hp.ID); hp2.TTL < 55*time.Second {
		t.Fatalf("permit TTL %v after the extend", hp2.TTL)
	}

	recs, err := a.Audit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[len(recs)-1]; r.Action != ActionExtendHolder || r.Holder != ownerA || r.TTL != time.Minute || r.Result != Extended || r.Reason != "deploy" {
		t.Fatalf("record %+v", r)
	}
}
