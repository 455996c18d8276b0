package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

// The mixed keyspace is what Mixed says it is, as the scanner reads it: each lock's format,
// TTL, acquired time and waiters, and the tally adds them up.
func TestMixedLocksAsTheScannerReadsThem(t *testing.T) {
	const n = 4000
	s := Start(t)
	c := s.Client()
	now := time.Now()
	tally := LoadMixedLocks(t, c, n, now)
	census, err := scanner.New(connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{c}, Addrs: []string{s.Addr}},
		scanner.Options{}).Census(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(census.Locks) != n {
		t.Fatalf("census: %d locks, want %d", len(census.Locks), n)
	}
	byKey := map[string]scanner.Lock{}
	for _, l := range census.Locks {
		byKey[l.Key] = l
	}
	formats := map[string]int{}
	for i := range n {
		want := Mixed(i, now)
		got, ok := byKey[want.Key]
		formats[want.Format]++
		switch {
		case !ok:
			t.Errorf("%s: not in the census", want.Key)
		case string(got.Format) != want.Format:
			t.Errorf("%s: format %s, want %s (value %q)", want.Key, got.Format, want.Format, want.Value)
		case got.NoExpiry != (want.TTL == 0):
			t.Errorf("%s: no expiry %v, want TTL %v", want.Key, got.NoExpiry, want.TTL)
		case want.Format == "lockscope" && !got.AcquiredAt.Equal(time.UnixMilli(want.Acquired.UnixMilli())):
			t.Errorf("%s: acquired %v, want %v", want.Key, got.AcquiredAt, want.Acquired)
		case want.Format == "lockscope" && got.Waiters != want.Waiters:
			t.Errorf("%s: %d waiters, want %d", want.Key, got.Waiters, want.Waiters)
		}
	}
	// Every format of the mix is there, in the promised shares.
	wantShare := map[string]float64{"lockscope": 0.71, "redsync": 0.15, "uuid": 0.05, "redisson": 0.05, "hex": 0.04}
	for f, share := range wantShare {
		if got := float64(formats[f]) / n; got < share-0.01 || got > share+0.01 {
			t.Errorf("format %s: share %.3f, want %.2f", f, got, share)
		}
	}
	total, noExpiry := 0, 0
	for g, byFormat := range tally.Locks {
		for _, k := range byFormat {
			total += k
		}
		noExpiry += tally.NoExpiry[g]
		// Every group has each kind of lock, stuck ones and waiters among them.
		if len(byFormat) != len(wantShare) || tally.NoExpiry[g] == 0 || tally.Stuck[g] == 0 || tally.Waiters[g] == 0 || !tally.Oldest[g].Equal(now.Add(-StuckAge)) {
			t.Errorf("group %s: formats %v, %d without expiry, %d stuck, %d waiters, oldest %v", g, byFormat, tally.NoExpiry[g], tally.Stuck[g], tally.Waiters[g], tally.Oldest[g])
		}
	}
	if total != n || tally.WithTTL != n-noExpiry || noExpiry != n/100 || len(tally.Locks) != len(MixedGroups) {
		t.Errorf("tally: %d locks, %d with TTL, %d without, %d groups", total, tally.WithTTL, noExpiry, len(tally.Locks))
	}
}
