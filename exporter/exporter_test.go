package exporter

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/exporter/exportertest"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/scanner"
)

var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// fakeClock is the exporter's clock in these tests: set, never read from the system.
type fakeClock struct{ at time.Time }

func (c *fakeClock) now() time.Time { return c.at }

func newTest(t *testing.T, target connect.Target, opts Options) (*Exporter, *fakeClock) {
	t.Helper()
	clk := &fakeClock{at: t0}
	opts.Now = clk.now
	return New(target, opts), clk
}

var standalone = connect.Target{Mode: connect.Standalone, Addrs: []string{"10.0.0.1:6379"}}

func scrape(t *testing.T, e *Exporter) exportertest.Samples {
	t.Helper()
	var b bytes.Buffer
	if err := e.WriteMetrics(&b); err != nil {
		t.Fatal(err)
	}
	return exportertest.Parse(t, b.String())
}

// want checks the listed series' values, and that the series listed as absent (NaN) are.
func want(t *testing.T, got exportertest.Samples, series map[string]float64) {
	t.Helper()
	for s, v := range series {
		g, ok := got[s]
		switch {
		case math.IsNaN(v): // must be absent
			if ok {
				t.Errorf("%s = %v, want no such series", s, g)
			}
		case !ok:
			t.Errorf("no series %s", s)
		case g != v:
			t.Errorf("%s = %v, want %v", s, g, v)
		}
	}
}

var absent = math.NaN()

// locks is a census of several kinds: a locklib lock taken 10 min ago with waiters, one just
// taken, a Redisson hash, a plain string without TTL, a lock whose stamp is in the future
// (skew: age unknown).
func locks() []scanner.Lock {
	return []scanner.Lock{
		{Key: "lock:orders:1", Format: scanner.FormatLockscope, AcquiredAt: t0.Add(-10 * time.Minute), TTL: 20 * time.Second, FetchedAt: t0, Waiters: 3, HasWaiters: true},
		{Key: "lock:orders:2", Format: scanner.FormatLockscope, AcquiredAt: t0.Add(-2 * time.Second), TTL: 3 * time.Second, FetchedAt: t0, HasWaiters: true},
		{Key: "lock:users:9", Format: scanner.FormatRedisson, TTL: 30 * time.Minute, FetchedAt: t0, Waiters: 1, HasWaiters: true},
		{Key: "lock:orders:3", Format: scanner.FormatOpaque, NoExpiry: true, FetchedAt: t0},
		{Key: "lock:skew:1", Format: scanner.FormatLockscope, AcquiredAt: t0.Add(time.Hour), TTL: 2 * time.Hour, FetchedAt: t0},
		{Key: "mutex", Format: scanner.FormatRedsync, TTL: 10 * time.Second, FetchedAt: t0, Waiters: 7}, // HasWaiters false: unknown
	}
}

func TestMetricsOfACensus(t *testing.T) {
	e, clk := newTest(t, standalone, Options{Version: "v1.2.3"})
	e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: "10.0.0.1:6379", Clock: scanner.ServerClock{Addr: "10.0.0.1:6379", Answered: t0}})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: locks()})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1, Census: scanner.Census{Duration: 1500 * time.Millisecond}})
	clk.at = t0.Add(time.Second)
	got := scrape(t, e)
	want(t, got, map[string]float64{
		`lockscope_locks{group="orders",format="lockscope"}`:     2,
		`lockscope_locks{group="orders",format="opaque"}`:        1,
		`lockscope_locks{group="users",format="redisson"}`:       1,
		`lockscope_locks{group="skew",format="lockscope"}`:       1,
		`lockscope_locks{group="_",format="redsync"}`:            1,
		`lockscope_locks{group="users",format="lockscope"}`:      absent,
		`lockscope_locks_no_expiry{group="orders"}`:              1,
		`lockscope_locks_no_expiry{group="users"}`:               0,
		`lockscope_locks_stuck{group="orders"}`:                  1, // 10 min > 5 min
		`lockscope_locks_stuck{group="skew"}`:                    0,
		`lockscope_redlock_locks_without_quorum{group="orders"}`: absent, // not a Redlock target
		`lockscope_lock_oldest_age_seconds{group="orders"}`:      601,
		`lockscope_lock_oldest_age_seconds{group="users"}`:       absent, // redisson: age unknown
		`lockscope_lock_oldest_age_seconds{group="skew"}`:        absent, // stamped an hour ahead
		`lockscope_lock_waiters{group="orders"}`:                 3,
		`lockscope_lock_waiters{group="users"}`:                  1,
		`lockscope_lock_waiters{group="_"}`:                      0,
		// orders: 19 s and 2 s left (the no-expiry lock is not in the histogram)
		`lockscope_lock_ttl_seconds_bucket{group="orders",le="1"}`:           0,
		`lockscope_lock_ttl_seconds_bucket{group="orders",le="5"}`:           1,
		`lockscope_lock_ttl_seconds_bucket{group="orders",le="15"}`:          1,
		`lockscope_lock_ttl_seconds_bucket{group="orders",le="30"}`:          2,
		`lockscope_lock_ttl_seconds_bucket{group="orders",le="+Inf"}`:        2,
		`lockscope_lock_ttl_seconds_sum{group="orders"}`:                     21,
		`lockscope_lock_ttl_seconds_count{group="orders"}`:                   2,
		`lockscope_lock_ttl_seconds_bucket{group="users",le="900"}`:          0,
		`lockscope_lock_ttl_seconds_bucket{group="users",le="3600"}`:         1,
		`lockscope_census_duration_seconds`:                                  1.5,
		`lockscope_census_passes_total`:                                      1,
		`lockscope_census_partial`:                                           0,
		`lockscope_census_last_success_timestamp_seconds`:                    float64(t0.Unix()),
		`lockscope_census_errors_total{server="10.0.0.1:6379"}`:              0,
		`lockscope_server_up{server="10.0.0.1:6379",role="standalone"}`:      1,
		`lockscope_redlock_quorum`:                                           absent,
		`lockscope_exporter_groups_folded`:                                   0,
		`lockscope_exporter_info{version="v1.2.3",target_kind="standalone"}`: 1,
	})
}

// TestKeysThatAreNotLocks: a list, set or counter under the pattern (format not-a-lock) is
// counted by its format only, as `lockscope ls` counts it apart ("3 other keys (not locks)"):
// without a TTL it is no lock without expiry (LockWithoutExpiry fired for it), and it has no
// place in the TTL histogram (with a TTL; without one it was put at 0 s left).
func TestKeysThatAreNotLocks(t *testing.T) {
	e, _ := newTest(t, standalone, Options{})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: "lock:stats:q", Format: scanner.FormatNotALock, Type: "list", NoExpiry: true, FetchedAt: t0},
		{Key: "lock:stats:s", Format: scanner.FormatNotALock, Type: "set", TTL: time.Minute, FetchedAt: t0},
		{Key: "lock:orders:1", Format: scanner.FormatOpaque, NoExpiry: true, FetchedAt: t0},
		{Key: "lock:orders:q", Format: scanner.FormatNotALock, Type: "zset", NoExpiry: true, FetchedAt: t0},
	}})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks{group="stats",format="not-a-lock"}`:  2,
		`lockscope_locks{group="orders",format="not-a-lock"}`: 1,
		`lockscope_locks{group="orders",format="opaque"}`:     1,
		`lockscope_locks_no_expiry{group="stats"}`:            0,
		`lockscope_locks_no_expiry{group="orders"}`:           1,
		`lockscope_lock_ttl_seconds_count{group="stats"}`:     0,
		`lockscope_lock_ttl_seconds_count{group="orders"}`:    0,
	})
}

// TestHeldSinceFirstSeen: a format without an acquisition stamp (redsync's token, Redisson's
// owners) ages from when the exporter first saw its holder: a lower bound that makes such a
// lock stuck too. A new holder starts again; a Redisson re-entry (its count) does not; a lock
// whose value could not be read has no age.
func TestHeldSinceFirstSeen(t *testing.T) {
	e, clk := newTest(t, standalone, Options{StuckAfter: 5 * time.Minute})
	batch := func(gen uint64, at time.Time, token string, count int) {
		e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: gen, Locks: []scanner.Lock{
			{Key: "lock:pay:1", Format: scanner.FormatRedsync, Value: token, TTL: 30 * time.Second, FetchedAt: at},
			{Key: "lock:pay:2", Format: scanner.FormatRedisson, Type: "hash", Value: fmt.Sprintf("u1:7=%d", count),
				Owners: []scanner.Owner{{ID: "u1:7", Count: count}}, TTL: 30 * time.Second, FetchedAt: at},
			{Key: "lock:dark:1", Format: scanner.FormatOpaque, TTL: 30 * time.Second, FetchedAt: at}, // no value read
		}})
		e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: gen})
	}
	batch(1, t0, "tok-A", 1)
	clk.at = t0.Add(6 * time.Minute)
	batch(2, clk.at, "tok-A", 2)
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks_stuck{group="pay"}`:              2,
		`lockscope_lock_oldest_age_seconds{group="pay"}`:  360,
		`lockscope_locks_stuck{group="dark"}`:             0,
		`lockscope_lock_oldest_age_seconds{group="dark"}`: absent,
	})
	clk.at = t0.Add(7 * time.Minute)
	batch(3, clk.at, "tok-B", 2) // another holder took pay:1
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks_stuck{group="pay"}`:             1,
		`lockscope_lock_oldest_age_seconds{group="pay"}`: 420,
	})
}

// TestSemaphoresNeitherNoExpiryNorStuck: a Redisson semaphore's key has no TTL by design and
// its holders are unknown: an unchanged count of available permits does not make it stuck,
// and it has no place in the TTL histogram; an RPermitExpirableSemaphore (its permits on
// record) is no lock without expiry; an RSemaphore's count is, as a naive lock whose EXPIRE
// never came reads the same, and lockscope_locks_no_expiry_maybe_semaphore counts it apart
// so that an alert can leave it out; a lockscope semaphore (a lease set, whose TTL is its
// latest permit's deadline) is in the histogram.
func TestSemaphoresNeitherNoExpiryNorStuck(t *testing.T) {
	e, clk := newTest(t, standalone, Options{StuckAfter: 5 * time.Minute})
	batch := func(gen uint64, at time.Time) {
		e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: gen, Locks: []scanner.Lock{
			{Key: "lock:pool:redisson", Format: scanner.FormatRedisson, Type: "string", Value: "3", NoExpiry: true, FetchedAt: at,
				Shared: &scanner.Shared{Kind: scanner.KindSemaphore, Available: 3, HasAvailable: true, HoldersUnknown: true}},
			{Key: "lock:pool:psem", Format: scanner.FormatRedisson, Type: "string", Value: "2", NoExpiry: true, FetchedAt: at,
				Shared: &scanner.Shared{Kind: scanner.KindPermitSemaphore, Available: 2, HasAvailable: true, Limit: 3, HasLimit: true, InUse: 1}},
			{Key: "lock:pool:lockscope", Format: scanner.FormatLockscope, Type: "zset", Value: "p|...", TTL: 30 * time.Second, FetchedAt: at,
				Shared: &scanner.Shared{Kind: scanner.KindSemaphore, Limit: 5, HasLimit: true, InUse: 1}},
		}})
		e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: gen})
	}
	batch(1, t0)
	clk.at = t0.Add(10 * time.Minute)
	batch(2, clk.at)
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks_no_expiry{group="pool"}`:                 1,
		`lockscope_locks_no_expiry_maybe_semaphore{group="pool"}`: 1,
		`lockscope_locks_stuck{group="pool"}`:                     0,
		`lockscope_lock_ttl_seconds_count{group="pool"}`:          1,
	})
}

// TestAgesOnTheServersClock: a stamp is on its server's clock; a server an hour behind the
// local clock stamps its locks an hour "early", and the age must not count that hour.
func TestAgesOnTheServersClock(t *testing.T) {
	e, _ := newTest(t, standalone, Options{})
	addr := "10.0.0.1:6379"
	e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: addr, Clock: scanner.ServerClock{Addr: addr, Ahead: -time.Hour, Answered: t0}})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: "lock:a:1", Addr: addr, Format: scanner.FormatLockscope, AcquiredAt: t0.Add(-time.Hour - 30*time.Second), TTL: time.Minute, FetchedAt: t0},
	}})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_lock_oldest_age_seconds{group="a"}`: 30,
		`lockscope_locks_stuck{group="a"}`:             0,
	})
}

func TestGoneAndPassEnd(t *testing.T) {
	e, _ := newTest(t, standalone, Options{})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: locks()})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1})
	// A deletion heard between passes removes its lock at once.
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{{Key: "lock:users:9", Gone: true}}})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks{group="users",format="redisson"}`: absent,
		`lockscope_lock_waiters{group="users"}`:            absent,
	})
	// Pass 2 sees only two locks; a partial end keeps the others, a complete one drops them.
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: locks()[:2]})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{Missing: []string{"10.0.0.1:6379"}}})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks{group="orders",format="opaque"}`:       1,
		`lockscope_census_partial`:                              1,
		`lockscope_census_errors_total{server="10.0.0.1:6379"}`: 1,
		`lockscope_census_last_success_timestamp_seconds`:       float64(t0.Unix()),
	})
	// A pass older than one already ended is stale: it proves nothing.
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1})
	if got := scrape(t, e)[`lockscope_census_passes_total`]; got != 2 {
		t.Errorf("passes_total %v after a stale pass end, want 2", got)
	}
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2})
	got := scrape(t, e)
	want(t, got, map[string]float64{
		`lockscope_locks{group="orders",format="lockscope"}`: 2,
		`lockscope_locks{group="orders",format="opaque"}`:    absent,
		`lockscope_locks{group="skew",format="lockscope"}`:   absent,
		`lockscope_locks_no_expiry{group="orders"}`:          0,
		`lockscope_census_partial`:                           0,
	})
	if groups := got.Groups(); len(groups) != 1 || !groups["orders"] {
		t.Errorf("groups %v after the pass, want orders alone", groups)
	}
}

// TestCardinalityBounded: 100,000 locks, each in a group of its own, make at most
// --max-groups groups plus _other, whatever the order they come in.
func TestCardinalityBounded(t *testing.T) {
	const n, maxGroups = 100_000, 100
	e, _ := newTest(t, standalone, Options{MaxGroups: maxGroups})
	batch := make([]scanner.Lock, 0, 1000)
	for i := range n {
		batch = append(batch, scanner.Lock{Key: fmt.Sprintf("lock:g%06d:x", i), Format: scanner.FormatLockscope, TTL: time.Minute, FetchedAt: t0, AcquiredAt: t0})
		if len(batch) == cap(batch) {
			e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: batch})
			batch = batch[:0]
		}
	}
	got := scrape(t, e)
	groups := got.Groups()
	if len(groups) != maxGroups+1 || !groups[keygroup.Other] {
		t.Errorf("%d distinct groups (with _other: %v), want %d", len(groups), groups[keygroup.Other], maxGroups+1)
	}
	// Per group: locks, no_expiry, stuck, oldest age, waiters, 9 buckets + sum + count.
	if perGroup := 16; len(got) > (maxGroups+1)*perGroup+20 {
		t.Errorf("%d series for %d groups", len(got), len(groups))
	}
	want(t, got, map[string]float64{
		`lockscope_exporter_groups_folded`:                    n - maxGroups,
		`lockscope_locks{group="_other",format="lockscope"}`:  n - maxGroups,
		`lockscope_locks{group="g000000",format="lockscope"}`: 1,
		`lockscope_lock_ttl_seconds_count{group="_other"}`:    n - maxGroups,
	})
}

func TestLabelValuesEscaped(t *testing.T) {
	rule, err := keygroup.Parse(`regex:(?s)^lock:(.*)$`)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newTest(t, standalone, Options{Rule: rule})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: `lock:a"b\c` + "\nd", Format: scanner.FormatOpaque, NoExpiry: true, FetchedAt: t0},
	}})
	var b bytes.Buffer
	if err := e.WriteMetrics(&b); err != nil {
		t.Fatal(err)
	}
	if want := `lockscope_locks{group="a\"b\\c?d",format="opaque"} 1`; !strings.Contains(b.String(), want+"\n") {
		t.Errorf("no line %s in:\n%s", want, b.String())
	}
	exportertest.Parse(t, b.String())
}

func TestHealth(t *testing.T) {
	e, clk := newTest(t, standalone, Options{CensusMaxAge: time.Minute})
	addr := "10.0.0.1:6379"
	heard := func() {
		e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: addr, Clock: scanner.ServerClock{Addr: addr, Answered: clk.at}})
	}
	steps := []struct {
		what   string
		do     func()
		ok     bool
		reason string
	}{
		{"start", func() {}, false, "no census yet"},
		{"never answered", func() { clk.at = clk.at.Add(4 * time.Second) }, false, "server 10.0.0.1:6379 has not answered for 4s"},
		{"answered, no pass", heard, false, "no census yet"},
		{"pass done", func() { e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1}) }, true, "ok"},
		{"silent", func() { clk.at = clk.at.Add(5 * time.Second) }, false, "server 10.0.0.1:6379 has not answered for 5s"},
		{"heard again", heard, true, "ok"},
		{"pass failed", func() {
			e.Apply(scanner.Update{Kind: scanner.UpdateError, Gen: 2, Err: errors.New("EOF")})
		}, false, "the last census pass failed: EOF"},
		{"partial pass", func() {
			e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 3, Census: scanner.Census{Missing: []string{addr}}})
		}, true, "ok"},
		{"old census", func() { clk.at = clk.at.Add(2 * time.Minute); heard() }, false, "the last complete census pass ended 2m"},
		{"complete again", func() { e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 4}) }, true, "ok"},
		{"server forgotten", func() {
			clk.at = clk.at.Add(time.Hour)
			e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 5})
			e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: addr})
		}, true, "ok"},
	}
	for _, s := range steps {
		s.do()
		ok, reason := e.Health()
		if ok != s.ok || !strings.HasPrefix(reason, s.reason) {
			t.Errorf("%s: Health() = %v, %q; want %v, %q...", s.what, ok, reason, s.ok, s.reason)
		}
	}
}

func TestRedlockQuorum(t *testing.T) {
	addrs := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}
	e, clk := newTest(t, connect.Target{Mode: connect.Redlock, Addrs: addrs}, Options{})
	answer := func(addrs ...string) {
		for _, a := range addrs {
			e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: a, Clock: scanner.ServerClock{Addr: a, Answered: clk.at}})
		}
	}
	answer(addrs[0])
	want(t, scrape(t, e), map[string]float64{
		`lockscope_redlock_quorum`:                                   0,
		`lockscope_server_up{server="10.0.0.1:6379",role="redlock"}`: 1,
		`lockscope_server_up{server="10.0.0.3:6379",role="redlock"}`: 0,
	})
	answer(addrs[1])
	want(t, scrape(t, e), map[string]float64{`lockscope_redlock_quorum`: 1})
	clk.at = clk.at.Add(4 * time.Second)
	answer(addrs[2])
	want(t, scrape(t, e), map[string]float64{
		`lockscope_redlock_quorum`:                                   0,
		`lockscope_server_up{server="10.0.0.1:6379",role="redlock"}`: 0,
	})
	// Locks held by a quorum and one held by a single instance (not validly held).
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
		{Key: "lock:pay:1", Format: scanner.FormatLockscope, TTL: time.Minute, FetchedAt: t0, Quorum: &scanner.Quorum{Agree: 3, Needed: 2, Total: 3, Reached: true}},
		{Key: "lock:pay:2", Format: scanner.FormatLockscope, TTL: time.Minute, FetchedAt: t0, Quorum: &scanner.Quorum{Agree: 1, Needed: 2, Total: 3}},
	}})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_locks{group="pay",format="lockscope"}`:     2,
		`lockscope_redlock_locks_without_quorum{group="pay"}`: 1,
	})
	// A failed pass that names no server counts against each.
	e.Apply(scanner.Update{Kind: scanner.UpdateError, Gen: 1, Err: errors.New("no server")})
	e.Apply(scanner.Update{Kind: scanner.UpdateRetrying, Gen: 2, Addr: addrs[1], Err: errors.New("EOF")})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_census_errors_total{server="10.0.0.1:6379"}`: 1,
		`lockscope_census_errors_total{server="10.0.0.2:6379"}`: 2,
	})
}

// TestIndependentServersKeepTheirOwnLocks: the same key on two independent servers is two
// locks; deleting it on one leaves the other.
func TestIndependentServersKeepTheirOwnLocks(t *testing.T) {
	e, _ := newTest(t, connect.Target{Mode: connect.Independent, Addrs: []string{"a:1", "b:1"}}, Options{})
	l := scanner.Lock{Key: "lock:x:1", Format: scanner.FormatOpaque, NoExpiry: true, FetchedAt: t0}
	la, lb := l, l
	la.Addr, lb.Addr = "a:1", "b:1"
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{la, lb}})
	want(t, scrape(t, e), map[string]float64{`lockscope_locks{group="x",format="opaque"}`: 2})
	la.Gone = true
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{la}})
	want(t, scrape(t, e), map[string]float64{`lockscope_locks{group="x",format="opaque"}`: 1})
}

// TestClusterMasterDemoted: a master the scanner forgets (demoted by a failover) leaves
// server_up and /healthz, even though the list of followed servers still names it and a late
// pass counts an error against it; its promoted replica comes in with its heartbeat.
func TestClusterMasterDemoted(t *testing.T) {
	e, clk := newTest(t, connect.Target{Mode: connect.Cluster, Addrs: []string{"seed:7000"}}, Options{})
	heard := func(addrs ...string) {
		for _, a := range addrs {
			e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: a, Clock: scanner.ServerClock{Addr: a, Answered: clk.at}})
		}
	}
	following := func(addrs ...string) {
		var f scanner.Following
		for _, a := range addrs {
			f.Servers = append(f.Servers, scanner.ServerFollow{Addr: a})
		}
		e.Apply(scanner.Update{Kind: scanner.UpdateFollowing, Following: f})
	}
	following("m1:7000", "m2:7000")
	heard("m1:7000", "m2:7000")
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_server_up{server="seed:7000",role="master"}`: absent, // a seed is not a master
		`lockscope_server_up{server="m1:7000",role="master"}`:   1,
		`lockscope_server_up{server="m2:7000",role="master"}`:   1,
	})

	clk.at = clk.at.Add(10 * time.Second)
	e.Apply(scanner.Update{Kind: scanner.UpdateClock, Addr: "m1:7000"}) // demoted
	following("m1:7000", "m2:7000", "r1:7000")                          // the watch's list keeps it
	heard("m2:7000", "r1:7000")
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2, Census: scanner.Census{Missing: []string{"m1:7000"}}})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 3})
	want(t, scrape(t, e), map[string]float64{
		`lockscope_server_up{server="m1:7000",role="master"}`: absent,
		`lockscope_server_up{server="r1:7000",role="master"}`: 1,
		`lockscope_census_errors_total{server="m1:7000"}`:     1,
		`lockscope_census_errors_total{server="r1:7000"}`:     0,
		`lockscope_census_errors_total{server="seed:7000"}`:   absent,
	})
	if ok, reason := e.Health(); !ok {
		t.Errorf("Health() = %v, %q after the failover, want ok", ok, reason)
	}
}

// TestCensusShrinksAfterAPeak: after most locks are gone the index is built again at its new
// size, and every remaining lock is still found (a gone record removes the right one).
func TestCensusShrinksAfterAPeak(t *testing.T) {
	const n = 50_000
	e, _ := newTest(t, standalone, Options{})
	var all []scanner.Lock
	for i := range n {
		all = append(all, scanner.Lock{Key: fmt.Sprintf("lock:s:%d", i), Format: scanner.FormatOpaque, NoExpiry: true, FetchedAt: t0})
	}
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: all})
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: all[:1000]})
	e.Apply(scanner.Update{Kind: scanner.UpdatePassDone, Gen: 2})
	if c := e.census; c.peak != 1000 || cap(c.entries) > 2000 || len(c.index) != 1000 {
		t.Fatalf("after the pass: peak %d, entries cap %d, index %d; want 1000, about 1000, 1000", c.peak, cap(c.entries), len(c.index))
	}
	gone := all[500]
	gone.Gone = true
	e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{gone}})
	want(t, scrape(t, e), map[string]float64{`lockscope_locks{group="s",format="opaque"}`: 999})
	if _, ok := e.census.index[gone.Key]; ok {
		t.Error("the gone lock is still indexed")
	}
}

// TestLog: a warning once, a failure once while the passes fail alike, the recovery, and a
// failure after it again.
func TestLog(t *testing.T) {
	var logged []string
	e, _ := newTest(t, standalone, Options{Log: func(msg string) { logged = append(logged, msg) }})
	for _, u := range []scanner.Update{
		{Kind: scanner.UpdateWarning, Warning: "no permission to read wait queues"},
		{Kind: scanner.UpdateError, Gen: 1, Err: errors.New("EOF")},
		{Kind: scanner.UpdateError, Gen: 2, Err: errors.New("EOF")},
		{Kind: scanner.UpdatePassDone, Gen: 3, Census: scanner.Census{Warnings: []string{"no permission to read wait queues"}}},
		{Kind: scanner.UpdatePassDone, Gen: 4},
		{Kind: scanner.UpdateError, Gen: 5, Err: errors.New("EOF")},
	} {
		e.Apply(u)
	}
	want := []string{"warning: no permission to read wait queues", "census pass failed: EOF", "census pass ended again", "census pass failed: EOF"}
	if strings.Join(logged, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(logged, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzExposition: whatever a key holds, its group's label is escaped so that the exposition
// still parses, with the group's one series.
func FuzzExposition(f *testing.F) {
	f.Add(`a"b\c`)
	f.Add("\n\x00\xff}")
	f.Add(`x",le="1`)
	rule, err := keygroup.Parse(`regex:(?s)^lock:(.*)$`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		e, _ := newTest(t, standalone, Options{Rule: rule})
		e.Apply(scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{
			{Key: "lock:" + key, Format: scanner.FormatOpaque, TTL: time.Minute, FetchedAt: t0},
		}})
		got := scrape(t, e)
		escaped := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(rule.Group("lock:" + key))
		if v := got[`lockscope_locks{group="`+escaped+`",format="opaque"}`]; v != 1 || len(got.Groups()) != 1 {
			t.Fatalf("key %q: locks of its group %v, %d groups", key, v, len(got.Groups()))
		}
	})
}
