package redistest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// MixedGroups are the key groups of the mixed keyspace: lock i is lock:<MixedGroups[i%8]>:<i>.
var MixedGroups = []string{"orders", "payments", "inventory", "reports", "jobs", "sessions", "billing", "search"}

// MixedLock is lock i of the mixed keyspace, as LoadMixedLocks writes it.
type MixedLock struct {
	Key, Group string
	Format     string        // the scanner's name for the value's format
	Value      string        // a string lock's value ("" for a redisson hash)
	Field      string        // a redisson hash's one field, "<uuid>:<thread id>" (count 1)
	TTL        time.Duration // 0: no expiry
	Acquired   time.Time     // lockscope format only: the acquired_at in its value
	Waiters    int           // lockscope format only: entries in its wait queue
}

// MixedTally is what a keyspace of MixedLocks holds, by group.
type MixedTally struct {
	Locks    map[string]map[string]int // group -> format -> locks
	NoExpiry map[string]int            // group -> locks without TTL
	Stuck    map[string]int            // group -> lockscope locks acquired StuckAge ago
	Oldest   map[string]time.Time      // group -> the earliest acquired time of its lockscope locks
	Waiters  map[string]int            // group -> wait queue entries
	WithTTL  int                       // locks with a TTL
}

// StuckAge is how long ago the stuck locks of the mixed keyspace were acquired (every other
// lockscope-format lock was acquired at most 5 minutes before the load).
const StuckAge = 2 * time.Hour

// Mixed is lock i of a keyspace loaded at now, a deterministic mix by (i/8)%20: 70% locklib's
// format (a TTL of 5 to 120 minutes; every 50th of a group acquired StuckAge ago, every 100th
// + 1 with three waiters), 15% redsync tokens, 5% UUIDs, 5% Redisson hashes, 5% node-redlock hex
// tokens, of which every fifth is a locklib lock without expiry instead (1% of all).
func Mixed(i int, now time.Time) MixedLock {
	group := MixedGroups[i%len(MixedGroups)]
	l := MixedLock{Key: fmt.Sprintf("lock:%s:%07d", group, i), Group: group,
		TTL: 5*time.Minute + time.Duration(i*7919%116)*time.Minute}
	var token [16]byte
	binary.BigEndian.PutUint64(token[:8], uint64(i)*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(token[8:], uint64(i)+1)
	lockscope := func() {
		l.Format = "lockscope"
		l.Acquired = now.Add(-time.Duration(i%300) * time.Second)
		if (i/len(MixedGroups))%50 == 0 {
			l.Acquired = now.Add(-StuckAge)
		}
		if (i/len(MixedGroups))%100 == 1 {
			l.Waiters = 3
		}
		l.Value = protocol.Value{Node: fmt.Sprintf("svc-%d", i%64), Trace: fmt.Sprintf("t%d", i),
			AcquiredAt: time.UnixMilli(l.Acquired.UnixMilli()), Rand: fmt.Sprintf("%016x", i)}.String()
	}
	switch kind := (i / len(MixedGroups)) % 20; {
	case kind < 14:
		lockscope()
	case kind < 17:
		l.Format, l.Value = "redsync", base64.StdEncoding.EncodeToString(token[:])
	case kind == 17:
		l.Format, l.Value = "uuid", uuid(token)
	case kind == 18:
		l.Format, l.Field = "redisson", uuid(token)+":"+fmt.Sprint(1+i%32)
	case (i/len(MixedGroups)/20)%5 == 0:
		lockscope()
		l.TTL = 0
	default:
		l.Format, l.Value = "hex", fmt.Sprintf("%x", token)
	}
	return l
}

func uuid(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Write queues the commands that write l on pipe.
func (l MixedLock) Write(ctx context.Context, pipe redis.Pipeliner) {
	if l.Field != "" {
		pipe.HSet(ctx, l.Key, l.Field, 1)
		pipe.PExpire(ctx, l.Key, l.TTL)
	} else {
		pipe.Set(ctx, l.Key, l.Value, l.TTL)
	}
	for w := range l.Waiters {
		waiter := fmt.Sprintf("c%d:%d", w, w)
		pipe.ZAdd(ctx, protocol.WaitQueueKey(l.Key), redis.Z{Score: float64(w), Member: protocol.QueueEntry(waiter, l.TTL, l.Value)})
	}
}

// LoadMixedLocks writes Mixed(0, now) ... Mixed(n-1, now) with pipelines on 4 connections
// and returns what they hold.
func LoadMixedLocks(tb testing.TB, c *redis.Client, n int, now time.Time) MixedTally {
	tb.Helper()
	loadPipelined(tb, c, n, func(ctx context.Context, pipe redis.Pipeliner, i int) { Mixed(i, now).Write(ctx, pipe) })
	t := MixedTally{Locks: map[string]map[string]int{}, NoExpiry: map[string]int{}, Stuck: map[string]int{}, Waiters: map[string]int{}, Oldest: map[string]time.Time{}}
	for i := range n {
		l := Mixed(i, now)
		if t.Locks[l.Group] == nil {
			t.Locks[l.Group] = map[string]int{}
		}
		t.Locks[l.Group][l.Format]++
		if l.TTL == 0 {
			t.NoExpiry[l.Group]++
		} else {
			t.WithTTL++
		}
		if l.Format == "lockscope" && now.Sub(l.Acquired) >= StuckAge {
			t.Stuck[l.Group]++
		}
		if oldest, ok := t.Oldest[l.Group]; l.Format == "lockscope" && (!ok || l.Acquired.Before(oldest)) {
			t.Oldest[l.Group] = l.Acquired
		}
		t.Waiters[l.Group] += l.Waiters
	}
	return t
}
