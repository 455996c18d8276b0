package scanner

import (
	"context"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// leaseMember is a lease set member of owner rand, taken by node at acquired.
func leaseMember(mode protocol.Mode, op, node, rand string, acquired time.Time) string {
	return protocol.LeaseMember{Mode: mode, Op: op, Value: protocol.Value{Node: node, Trace: "t-" + node, AcquiredAt: acquired, Rand: rand}}.String()
}

const (
	randA = "00000000000000aa"
	randB = "00000000000000bb"
	randC = "00000000000000cc"
	opID  = "6f1c0a9e3b2d4c51"
)

// writeLeaseSets writes lockscope's lease sets as docs/value-format.md lays them out, with the
// server's clock for deadlines: a read lock with two readers (one re-entrant, two levels)
// and an expired reader not yet removed, a write lock downgrading (its writer holds a read
// level too) with a queue of a reader and a writer, and a semaphore of 3 permits with 2 out,
// one more expired, and a waiter. It returns the server's now in unix ms.
func writeLeaseSets(ctx context.Context, t *testing.T, c *redis.Client) int64 {
	t.Helper()
	tm, err := c.Time(ctx).Result()
	must(t, err)
	now := tm.UnixMilli()
	at := time.UnixMilli(now - 5000)
	set := func(key string, zs ...redis.Z) {
		must(t, c.ZAdd(ctx, key, zs...).Err())
		must(t, c.PExpire(ctx, key, time.Minute).Err())
	}
	set("lock:ls:read",
		redisZ(float64(now+20000), leaseMember(protocol.ModeRead, opID+":1", "api-1", randA, at)),
		redisZ(float64(now+30000), leaseMember(protocol.ModeRead, opID+":2", "api-1", randA, at.Add(time.Second))),
		redisZ(float64(now+10000), leaseMember(protocol.ModeRead, opID+":3", "api-2", randB, at)),
		redisZ(float64(now-1000), leaseMember(protocol.ModeRead, opID+":4", "api-3", randC, at)))
	set("lock:ls:write",
		redisZ(float64(now+15000), leaseMember(protocol.ModeWrite, opID+":5", "api-4", randA, at)),
		redisZ(float64(now+16000), leaseMember(protocol.ModeRead, opID+":6", "api-4", randA, at)))
	must(t, c.ZAdd(ctx, protocol.WaitQueueKey("lock:ls:write"),
		redisZ(1, opID+":7|30000|r|api-5:-:1764400000123:00000000000000dd"),
		redisZ(2, opID+":8|15000|w|api-6:-:1764400000123:00000000000000ee"),
		redisZ(3, "not a queue entry")).Err())
	set("lock:ls:sem",
		redisZ(float64(now+40000), leaseMember(protocol.ModePermit, opID+":9", "job-1", randA, at)),
		redisZ(float64(now+50000), leaseMember(protocol.ModePermit, opID+":10", "job-2", randB, at)),
		redisZ(float64(now-1), leaseMember(protocol.ModePermit, opID+":11", "job-3", randC, at)))
	must(t, c.Set(ctx, protocol.LimitKey("lock:ls:sem"), "3", 0).Err())
	must(t, c.ZAdd(ctx, protocol.WaitQueueKey("lock:ls:sem"), redisZ(1, opID+":12|60000|p|job-4:-:1764400000123:00000000000000ff")).Err())
	// A sorted set in no lease layout, and one that mixes permits with read levels.
	must(t, c.ZAdd(ctx, "lock:ls:other", redisZ(1, "member")).Err())
	set("lock:ls:mixed",
		redisZ(float64(now+1000), leaseMember(protocol.ModePermit, opID+":13", "x", randA, at)),
		redisZ(float64(now+1000), leaseMember(protocol.ModeRead, opID+":14", "x", randB, at)))
	return now
}

// TestLeaseSetsDecoded: lockscope's read-write locks and semaphores are shared primitives with
// every holder's levels, own TTL, node and trace, the expired members counted apart, the
// limit and what is available, and the queued waiters with their modes; in a census and in
// Get (show); other sorted sets stay no lock.
func TestLeaseSetsDecoded(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	writeLeaseSets(ctx, t, c)
	s := New(target, Options{})
	census, err := s.Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	for _, key := range []string{"lock:ls:read", "lock:ls:write", "lock:ls:sem"} {
		l, err := s.Get(ctx, key)
		must(t, err)
		checkLeaseSet(t, "census", got[key])
		checkLeaseSet(t, "Get", l)
	}
	for _, key := range []string{"lock:ls:other", "lock:ls:mixed"} {
		if l := got[key]; l.Format != FormatNotALock || l.Shared != nil {
			t.Errorf("%s: format %s shared %+v, want not-a-lock", key, l.Format, l.Shared)
		}
	}
}

func checkLeaseSet(t *testing.T, what string, l Lock) {
	t.Helper()
	sh := l.Shared
	if l.Format != FormatLockscope || l.Type != "zset" || sh == nil || l.NoExpiry {
		t.Fatalf("%s %s: format %s type %s shared %v no expiry %v", what, l.Key, l.Format, l.Type, sh, l.NoExpiry)
	}
	near := func(got, want time.Duration) bool { return got <= want && got > want-3*time.Second }
	switch l.Key {
	case "lock:ls:read":
		if sh.Kind != KindRWLock || sh.Mode != protocol.ModeRead || sh.InUse != 3 || sh.Expired != 1 || len(sh.Holders) != 3 {
			t.Fatalf("%s %s: %+v", what, l.Key, *sh)
		}
		a, b, gone := holderByID(sh, randA, protocol.ModeRead), holderByID(sh, randB, protocol.ModeRead), holderByID(sh, randC, protocol.ModeRead)
		if a.Count != 2 || len(a.Leases) != 2 || !near(a.TTL, 30*time.Second) || a.Node != "api-1" || a.Trace != "t-api-1" || a.Expired {
			t.Errorf("%s: re-entrant reader %+v", what, a)
		}
		if b.Count != 1 || !near(b.TTL, 10*time.Second) || b.Node != "api-2" {
			t.Errorf("%s: reader %+v", what, b)
		}
		if !gone.Expired || gone.TTL != 0 {
			t.Errorf("%s: expired reader %+v", what, gone)
		}
		if _, ok := protocol.ParseLeaseMember(a.Leases[0].Member); !ok || a.Leases[0].Deadline == 0 {
			t.Errorf("%s: lease %+v is not the member as stored", what, a.Leases[0])
		}
		if l.Node != "" {
			t.Errorf("%s: several readers named as one holder %q", what, l.Node)
		}
	case "lock:ls:write":
		w := holderByID(sh, randA, protocol.ModeWrite)
		if sh.Kind != KindRWLock || sh.Mode != protocol.ModeWrite || sh.InUse != 2 || w.Count != 1 || !near(w.TTL, 15*time.Second) {
			t.Errorf("%s %s: %+v", what, l.Key, *sh)
		}
		if l.Node != "api-4" || l.Trace != "t-api-4" {
			t.Errorf("%s: the downgrading writer is the one holder: node %q trace %q", what, l.Node, l.Trace)
		}
		if len(sh.Waiters) != 2 || sh.Waiters[0].Mode != protocol.ModeRead || sh.Waiters[1].Mode != protocol.ModeWrite ||
			sh.Waiters[1].TTL != 15*time.Second || sh.Waiters[0].ID != opID+":7" || !strings.HasPrefix(sh.Waiters[1].Value, "api-6:") {
			t.Errorf("%s: waiters %+v", what, sh.Waiters)
		}
		if !l.HasWaiters || l.Waiters != 3 {
			t.Errorf("%s: queue size %d/%v, want 3", what, l.Waiters, l.HasWaiters)
		}
	case "lock:ls:sem":
		if sh.Kind != KindSemaphore || sh.Mode != protocol.ModePermit || !sh.HasLimit || sh.Limit != 3 || sh.InUse != 2 ||
			!sh.HasAvailable || sh.Available != 1 || sh.Expired != 1 || len(sh.Holders) != 3 || sh.HoldersUnknown {
			t.Errorf("%s %s: %+v", what, l.Key, *sh)
		}
		if p := holderByID(sh, randB, protocol.ModePermit); p.Node != "job-2" || !near(p.TTL, 50*time.Second) || len(p.Leases) != 1 {
			t.Errorf("%s: permit %+v", what, p)
		}
		if len(sh.Waiters) != 1 || sh.Waiters[0].Mode != protocol.ModePermit {
			t.Errorf("%s: waiters %+v", what, sh.Waiters)
		}
		if !near(l.TTL, time.Minute) || !l.AcquiredAt.IsZero() || l.Node != "" {
			t.Errorf("%s: semaphore TTL %v acquired %v node %q", what, l.TTL, l.AcquiredAt, l.Node)
		}
	}
}

func holderByID(sh *Shared, id string, mode protocol.Mode) SharedHolder {
	for _, h := range sh.Holders {
		if h.ID == id && h.Mode == mode {
			return h
		}
	}
	return SharedHolder{}
}

// TestLeaseSetCapped: a lease set with more members than HashCap is read up to the cap and
// says so; its counts are of what was read.
func TestLeaseSetCapped(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	now := time.Now()
	zs := make([]redis.Z, 10)
	for i := range zs {
		rand := hex.EncodeToString([]byte{0, 0, 0, 0, 0, 0, 0, byte(i)})
		zs[i] = redisZ(float64(now.Add(time.Hour).UnixMilli()), leaseMember(protocol.ModeRead, opID+":1", "n", rand, now))
	}
	must(t, c.ZAdd(ctx, "lock:big", zs...).Err())
	must(t, c.PExpire(ctx, "lock:big", time.Hour).Err())
	l, err := New(target, Options{HashCap: 4}).Get(ctx, "lock:big")
	must(t, err)
	if l.Shared == nil || !l.Shared.Truncated || !l.Truncated || len(l.Shared.Holders) != 4 || l.Shared.InUse != 4 {
		t.Fatalf("capped lease set: %+v", l.Shared)
	}
}

// TestRedissonSharedDecoded: Redisson's read-write locks, RSemaphore and
// RPermitExpirableSemaphore as 3.52.0 writes them: readers with their own TTL (the longest of
// their levels' keys), the writer (its field without ":write" as its id), a semaphore's
// available permits with holders unknown and no NO-EXPIRY, a permit-expirable one's permits
// as 32 hex with their expiry, expired ones counted apart, and a permit acquired without a
// lease that never expires.
func TestRedissonSharedDecoded(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	writeRedissonLayouts(ctx, t, c)
	owner := func(thread string) string { return redissonClient + ":" + thread }
	// A second level of reader 65, living longer than its first.
	must(t, c.HIncrBy(ctx, "lock:r:rw-read", owner("65"), 1).Err())
	must(t, c.Set(ctx, "{lock:r:rw-read}:"+owner("65")+":rwlock_timeout:2", "1", 50*time.Second).Err())
	must(t, c.Set(ctx, "lock:r:sem", "3", 0).Err())
	now := time.Now().UnixMilli()
	permit, _ := hex.DecodeString("68b48de6cd392916141d807d6e4552b4")
	expired, _ := hex.DecodeString("00112233445566778899aabbccddeeff")
	forever, _ := hex.DecodeString("ffeeddccbbaa99887766554433221100")
	must(t, c.Set(ctx, "lock:r:psem2", "1", 0).Err())
	must(t, c.ZAdd(ctx, "{lock:r:psem2}:timeout", redisZ(float64(now+600000), string(permit)),
		redisZ(float64(now-5), string(expired)), redisZ(float64(RedissonNoExpiryMs), string(forever))).Err())

	census, err := New(target, Options{}).Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)

	read := got["lock:r:rw-read"]
	if read.Kind() != KindRWLock || read.Shared.Mode != protocol.ModeRead || read.Shared.InUse != 3 || len(read.Shared.Holders) != 2 {
		t.Fatalf("rw-read: %+v", read.Shared)
	}
	r65, r66 := holderByID(read.Shared, owner("65"), protocol.ModeRead), holderByID(read.Shared, owner("66"), protocol.ModeRead)
	if r65.Count != 2 || len(r65.Leases) != 2 || r65.TTL <= 30*time.Second || r65.Field != owner("65") {
		t.Errorf("reader 65: %+v", r65)
	}
	if r66.Count != 1 || r66.TTL > 30*time.Second || r66.TTL < 25*time.Second ||
		r66.Leases[0].Member != "{lock:r:rw-read}:"+owner("66")+":rwlock_timeout:1" {
		t.Errorf("reader 66: %+v", r66)
	}
	write := got["lock:r:rw-write"]
	w := holderByID(write.Shared, owner("67"), protocol.ModeWrite)
	if write.Kind() != KindRWLock || write.Shared.Mode != protocol.ModeWrite || w.Field != owner("67")+":write" || w.TTL != write.TTL || w.Count != 1 {
		t.Errorf("rw-write: %+v", write.Shared)
	}

	sem := got["lock:r:sem"]
	if sem.Kind() != KindSemaphore || !sem.Shared.HoldersUnknown || !sem.Shared.HasAvailable || sem.Shared.Available != 3 ||
		sem.Shared.HasLimit || !sem.NoExpiry || sem.Format != FormatRedisson {
		t.Errorf("RSemaphore: %s %+v", sem.Format, sem.Shared)
	}
	if !sem.HasWaiters || sem.Waiters != 0 {
		t.Errorf("RSemaphore waiters %d/%v, want 0 known (its channel's subscribers)", sem.Waiters, sem.HasWaiters)
	}

	psem := got["lock:r:psem2"].Shared
	if psem == nil || psem.Kind != KindPermitSemaphore || psem.InUse != 2 || psem.Expired != 1 || !psem.HasLimit || psem.Limit != 4 ||
		psem.Available != 1 || psem.HoldersUnknown {
		t.Fatalf("psem: %+v", psem)
	}
	p := holderByID(psem, "68b48de6cd392916141d807d6e4552b4", protocol.ModePermit)
	if p.Expired || p.TTL < 590*time.Second || p.TTL > 600*time.Second || p.Leases[0].Member != string(permit) || p.Leases[0].Deadline != now+600000 {
		t.Errorf("permit: %+v", p)
	}
	if e := holderByID(psem, "00112233445566778899aabbccddeeff", protocol.ModePermit); !e.Expired {
		t.Errorf("expired permit: %+v", e)
	}
	if f := holderByID(psem, "ffeeddccbbaa99887766554433221100", protocol.ModePermit); !f.NoExpiry || f.Expired || f.TTL != 0 {
		t.Errorf("permit without lease: %+v", f)
	}
	// The original fixture's psem, with one permit of 4 raw bytes.
	if l := got["lock:r:psem"]; l.Kind() != KindPermitSemaphore || l.Shared.Holders[0].ID != "68b48de6" {
		t.Errorf("lock:r:psem: %+v", l.Shared)
	}
}

// FuzzDecodeShared: any sorted set members, scores, limit and queue entries (a lockscope lease
// set), any permit ids (a Redisson RPermitExpirableSemaphore) and any field with a mode (an
// RReadWriteLock's hash) decode without a panic, into counts that add up: every member read is
// a level of one holder, live or expired.
func FuzzDecodeShared(f *testing.F) {
	f.Add("r|6f1c0a9e3b2d4c51:1|api:-:1764400000123:00000000000000aa", 1764400010000.0, "3", "6f1c0a9e3b2d4c51:2|100|w|a:-:1:00000000000000bb", []byte("\x68\xb4\x8d\xe6"), redissonClient+":65:write", "write", "2")
	f.Fuzz(func(t *testing.T, member string, score float64, limit, entry string, permit []byte, field, mode, count string) {
		const now = 1764400000000
		var l Lock
		members := []redis.Z{{Score: score, Member: member}, {Score: score + 1, Member: member + "x"}}
		if decodeLeaseSet(&l, members, false, now, limit, []string{entry}) {
			sh := l.Shared
			levels := 0
			for _, h := range sh.Holders {
				levels += h.Count
				if len(h.Leases) != h.Count || (h.Expired && h.TTL != 0) || h.TTL < 0 {
					t.Fatalf("holder %+v", h)
				}
			}
			if levels != len(members) || sh.InUse+sh.Expired != levels || sh.Available < 0 || len(l.Value) > ValueCap {
				t.Fatalf("lease set %+v from %q", *sh, member)
			}
		}
		if w, ok := parseLeaseQueueEntry(entry); ok && (w.Entry != entry || w.Mode == 0) {
			t.Fatalf("waiter %+v of %q", w, entry)
		}
		sem := Lock{NoExpiry: true}
		if redissonSemaphore(&sem, limit) {
			redissonPermits(&sem, []redis.Z{{Score: score, Member: string(permit)}}, false, now)
			sh := sem.Shared
			if h := sh.Holders[0]; h.ID != hex.EncodeToString(permit) || h.Leases[0].Member != string(permit) {
				t.Fatalf("permit %+v of %x", h, permit)
			}
			if sh.Kind != KindPermitSemaphore || sh.InUse+sh.Expired != 1 || sh.Limit != sh.Available+1 {
				t.Fatalf("permit semaphore %+v", *sh)
			}
		}
		var h Lock
		decodeHash(&h, []hashField{{redissonModeField, mode}, {field, count}})
		if h.Format == FormatRedisson && mode != "" {
			sh := h.Shared
			suffix := ""
			if sh != nil && len(sh.Holders) == 1 && sh.Holders[0].Mode == protocol.ModeWrite {
				suffix = redissonWriteSuffix
			}
			if sh == nil || sh.Kind != KindRWLock || len(sh.Holders) != 1 || sh.Holders[0].Field != field || sh.Holders[0].ID+suffix != field {
				t.Fatalf("rw lock %+v from %q=%q", sh, field, count)
			}
		}
	})
}

// TestFollowHearsSharedCompanions: a Redisson semaphore's permits and a reader's level, which
// change without their lock key (a permit's lease updated, a level re-timed), make Watch
// re-read the lock, by tracking and by keyspace notifications, long before the next pass.
func TestFollowHearsSharedCompanions(t *testing.T) {
	for _, notifications := range []bool{false, true} {
		_, c, target := startStandalone(t)
		ctx := testCtx(t)
		must(t, c.Set(ctx, "lock:f:psem", "2", 0).Err())
		must(t, c.HSet(ctx, "lock:f:rw", "mode", "read", redissonClient+":7", "1").Err())
		updates := New(target, Options{Interval: time.Hour, ConfigureNotifications: notifications}).Watch(ctx)
		waitFor(t, updates, 10*time.Second, "pass 1", passDone(1))

		must(t, c.ZAdd(ctx, "{lock:f:psem}:timeout", redisZ(float64(time.Now().Add(time.Minute).UnixMilli()), "permit")).Err())
		waitFor(t, updates, 5*time.Second, "the semaphore re-read with its permit", func(u Update) bool {
			l, ok := lockIn(u, "lock:f:psem")
			return ok && l.Kind() == KindPermitSemaphore
		})
		must(t, c.Set(ctx, "{lock:f:rw}:"+redissonClient+":7:rwlock_timeout:1", "1", 40*time.Second).Err())
		waitFor(t, updates, 5*time.Second, "the read lock re-read with its reader's level", func(u Update) bool {
			l, ok := lockIn(u, "lock:f:rw")
			return ok && l.Kind() == KindRWLock && len(l.Shared.Holders) == 1 && l.Shared.Holders[0].TTL > 30*time.Second
		})
	}
}

// TestLocklibSharedPrimitivesDecoded: what locklib itself writes decodes as docs/value-format.md
// says: two readers of a read-write lock with a writer queued behind them, a re-entrant
// writer's two levels, and a semaphore of 3 with 2 permits out, each holder's ID the rand of
// the value locklib holds.
func TestLocklibSharedPrimitivesDecoded(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	api1, api2 := locklib.New(c, locklib.WithNode("api-1")), locklib.New(c, locklib.WithNode("api-2"))
	// Closed last (cleanups run in reverse): the queued writer gone, its clean-up done.
	t.Cleanup(func() { _ = api1.Close(); _ = api2.Close() })
	r1, err := api1.ObtainRead(ctx, "lock:e2e:doc", time.Minute, locklib.WithTrace("t1"))
	must(t, err)
	r2, err := api2.ObtainRead(ctx, "lock:e2e:doc", 30*time.Second)
	must(t, err)
	waitCtx, stop := context.WithCancel(ctx)
	queued := make(chan struct{})
	go func() { // queued behind the readers until the test ends
		defer close(queued)
		_, _ = api2.ObtainWrite(waitCtx, "lock:e2e:doc", time.Minute)
	}()
	t.Cleanup(func() { stop(); <-queued })

	owner := locklib.Reentrant("editor")
	w1, err := api1.ObtainWrite(ctx, "lock:e2e:edit", time.Minute, owner)
	must(t, err)
	_, err = api1.ObtainWrite(ctx, "lock:e2e:edit", time.Minute, owner)
	must(t, err)

	pool := api1.Semaphore("lock:e2e:pool", 3)
	p1, err := pool.Acquire(ctx, time.Minute)
	must(t, err)
	p2, err := pool.Acquire(ctx, 20*time.Second)
	must(t, err)

	s := New(target, Options{})
	var doc Lock
	deadline := time.Now().Add(5 * time.Second)
	for doc.Shared == nil || len(doc.Shared.Waiters) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no queued writer on lock:e2e:doc: %+v", doc.Shared)
		}
		doc, err = s.Get(ctx, "lock:e2e:doc")
		must(t, err)
	}
	randOf := func(l *locklib.Lock) string {
		v, err := protocol.ParseValue(l.Value())
		must(t, err)
		return v.Rand
	}
	sh := doc.Shared
	h1, h2 := holderByID(sh, randOf(r1), protocol.ModeRead), holderByID(sh, randOf(r2), protocol.ModeRead)
	if sh.Kind != KindRWLock || sh.Mode != protocol.ModeRead || sh.InUse != 2 || h1.Node != "api-1" || h1.Trace != "t1" || h2.Node != "api-2" ||
		h1.TTL <= 30*time.Second || h2.TTL > 30*time.Second || sh.Waiters[0].Mode != protocol.ModeWrite {
		t.Errorf("lock:e2e:doc: %+v", *sh)
	}
	edit, err := s.Get(ctx, "lock:e2e:edit")
	must(t, err)
	if w := holderByID(edit.Shared, randOf(w1), protocol.ModeWrite); edit.Shared.Mode != protocol.ModeWrite || w.Count != 2 || edit.Reentry != 2 || edit.Node != "api-1" {
		t.Errorf("lock:e2e:edit: reentry %d, %+v", edit.Reentry, edit.Shared)
	}
	sem, err := s.Get(ctx, "lock:e2e:pool")
	must(t, err)
	if sh := sem.Shared; sem.Kind() != KindSemaphore || sh.Limit != 3 || sh.InUse != 2 || sh.Available != 1 ||
		holderByID(sh, randOf(p1), protocol.ModePermit).Count != 1 || holderByID(sh, randOf(p2), protocol.ModePermit).TTL > 20*time.Second {
		t.Errorf("lock:e2e:pool: %+v", sem.Shared)
	}
}

// TestInfiniteScoresHoldForever: a lease or a permit scored +inf (Redis takes it; locklib's
// and Redisson's expiry never removes it) holds forever and reads so, never as expired; one
// scored -inf has expired. (Go's conversion of ±Inf to int64 is not defined: on amd64 both
// give the most negative int64.)
func TestInfiniteScoresHoldForever(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	now := time.Now()
	must(t, c.ZAdd(ctx, "lock:inf", redisZ(math.Inf(1), leaseMember(protocol.ModeRead, opID+":1", "n", "00000000000000aa", now)),
		redisZ(math.Inf(-1), leaseMember(protocol.ModeRead, opID+":2", "n", "00000000000000bb", now))).Err())
	must(t, c.Set(ctx, "lock:infsem", "2", 0).Err())
	must(t, c.ZAdd(ctx, "{lock:infsem}:timeout", redisZ(math.Inf(1), "\x01\x02")).Err())
	s := New(target, Options{})
	l, err := s.Get(ctx, "lock:inf")
	must(t, err)
	if live := holderByID(l.Shared, "00000000000000aa", protocol.ModeRead); live.Expired || live.TTL < 24*time.Hour {
		t.Errorf("+inf lease: %+v", live)
	}
	if dead := holderByID(l.Shared, "00000000000000bb", protocol.ModeRead); !dead.Expired {
		t.Errorf("-inf lease: %+v", dead)
	}
	sem, err := s.Get(ctx, "lock:infsem")
	must(t, err)
	if p := holderByID(sem.Shared, "0102", protocol.ModePermit); p.Expired || !p.NoExpiry {
		t.Errorf("+inf permit: %+v", p)
	}
}
