package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The proof must be able to fail: two sections with the same token (a lock service that
// handed the lock to both) whose writes interleave, all accepted, are one overlap.
func TestCheckerCountsInterleavedAcceptedWrites(t *testing.T) {
	c := newChecker(FencingTokens)
	a := c.open("lock:demo:x", 1, 7, "va", Healthy, time.Millisecond)
	b := c.open("lock:demo:x", 2, 7, "vb", Healthy, time.Millisecond)
	for i, w := range []struct {
		s     *section
		claim bool
	}{{a, true}, {b, true}, {a, false}} {
		var ok bool
		if w.claim {
			ok = c.claim(w.s)
		} else {
			ok = c.write(w.s)
		}
		if !ok {
			t.Fatalf("write %d refused; this test needs every write accepted", i)
		}
	}
	k, _ := c.totals()
	if k.Overlaps != 1 || k.StaleRejected != 0 || k.Sections != 2 || k.Handoffs != 1 {
		t.Fatalf("counters %+v, want 1 overlap, 0 stale, 2 sections, 1 hand-off", k)
	}
	// More writes of the same pair do not count the same section twice.
	c.write(b)
	c.write(a)
	if k, _ := c.totals(); k.Overlaps != 2 {
		t.Fatalf("overlaps %d after b and a wrote again, want 2 (each section counted once)", k.Overlaps)
	}
}

// pausedPair is a checker under p with two sections of workers 1 and 2 on one resource, in
// the pause phase: a (token ta) entered first, then b (token tb).
func pausedPair(p Protection, ta, tb int64) (c *checker, a, b *section) {
	c = newChecker(p)
	a = c.open("lock:demo:x", 1, ta, "va", Pause, 0)
	b = c.open("lock:demo:x", 2, tb, "vb", Pause, 0)
	return c, a, b
}

// A late writer with a lower token is refused: stale, not an overlap.
func TestCheckerFenceRefusesStaleToken(t *testing.T) {
	c, a, b := pausedPair(FencingTokens, 7, 8)
	if !c.claim(a) || !c.claim(b) {
		t.Fatal("first writes refused")
	}
	if c.write(a) {
		t.Fatal("write with token 7 accepted after token 8")
	}
	if !c.write(b) {
		t.Fatal("the current holder's write was refused")
	}
	k, _ := c.totals()
	if k.StaleRejected != 1 || k.Overlaps != 0 || k.StaleAccepted != 0 || k.Unsafe() {
		t.Fatalf("counters %+v, want 1 stale rejected, 0 accepted, 0 overlaps: safe", k)
	}
	if pk, _ := c.phase(Pause); pk.StaleRejected != 1 {
		t.Fatalf("pause phase counters %+v", pk)
	}
}

// Owner compare (Redlock): a newer claim makes the older owner's writes stale.
func TestCheckerOwnerCompare(t *testing.T) {
	c, a, b := pausedPair(OwnerCompare, 0, 0)
	c.claim(a)
	c.claim(b)
	if c.write(a) {
		t.Fatal("old owner's write accepted after a newer claim")
	}
	if !c.write(b) {
		t.Fatal("current owner's write refused")
	}
	if k, _ := c.totals(); k.StaleRejected != 1 || k.Overlaps != 0 {
		t.Fatalf("counters %+v", k)
	}
}

// Without a fence (the naive lock) the frozen holder's late write goes through: it is an
// overlap and a stale write accepted, and the counters say unsafe.
func TestCheckerUnprotectedAcceptsTheLateWrite(t *testing.T) {
	c, a, b := pausedPair(Unprotected, 0, 0)
	if !c.claim(a) || !c.claim(b) || !c.write(a) || !c.write(b) {
		t.Fatal("a write was refused by a resource that checks nothing")
	}
	k, _ := c.totals()
	if k.StaleAccepted != 1 || k.Overlaps != 2 || k.StaleRejected != 0 || !k.Unsafe() {
		t.Fatalf("counters %+v, want 1 stale accepted (a's late write), 2 overlaps (a, then b), unsafe", k)
	}
	// A write of the newest section, or of a section no one entered after, is no stale write.
	c.write(b)
	if k, _ := c.totals(); k.StaleAccepted != 1 {
		t.Fatalf("stale accepted %d after the newest holder wrote, want 1", k.StaleAccepted)
	}
}

// Owner compare's known gap: a holder frozen before its claim claims over the newer holder.
// The resource accepts it; the checker counts it as the stale write it is.
func TestCheckerOwnerCompareLateClaim(t *testing.T) {
	c, a, b := pausedPair(OwnerCompare, 0, 0)
	c.claim(b)
	if !c.claim(a) {
		t.Fatal("owner compare refused a claim; this test is about the one it accepts")
	}
	if c.write(b) {
		t.Fatal("the newer holder's write was accepted after the late claim")
	}
	if k, _ := c.totals(); k.StaleAccepted != 1 || k.Overlaps != 0 || !k.Unsafe() {
		t.Fatalf("counters %+v, want 1 stale accepted, 0 overlaps", k)
	}
}

func TestSummaryVerdict(t *testing.T) {
	for _, tc := range []struct {
		k      Counters
		unsafe bool
	}{
		{Counters{Sections: 9, StaleRejected: 2, NoTTLLocks: 1}, false},
		{Counters{Overlaps: 1}, true},
		{Counters{StaleAccepted: 1}, true},
		{Counters{Sections: 9, TokenRegressions: 1}, true},
	} {
		s := Summary{Lock: LockLib, Counters: tc.k}
		err := s.Verdict()
		if got := errors.Is(err, ErrUnsafe); got != tc.unsafe {
			t.Errorf("%+v: verdict %v, want unsafe %v", tc.k, err, tc.unsafe)
		}
		var b strings.Builder
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "verdict: UNSAFE"); got != tc.unsafe {
			t.Errorf("%+v: text verdict disagrees with Verdict():\n%s", tc.k, b.String())
		}
		// The text verdict names what made the run unsafe: a token regression too, not
		// "0 interleaved, 0 accepted" under UNSAFE.
		if tc.k.TokenRegressions > 0 && !strings.Contains(b.String(), "1 fencing tokens after a promotion not above the last before") {
			t.Errorf("%+v: the text verdict does not name the token regression:\n%s", tc.k, b.String())
		}
	}
}

// A crashed holder's resource, entered by another worker, counts one expiry, in the crash's phase.
func TestCheckerExpiredAfterCrash(t *testing.T) {
	c := newChecker(FencingTokens)
	a := c.open("lock:demo:x", 1, 1, "va", Healthy, 0)
	c.crashed(a, Crash)                           // entered in one phase, crashed in the next
	c.open("lock:demo:y", 2, 1, "vb", Healthy, 0) // another resource: not a take-over
	if k, _ := c.totals(); k.ExpiredAfterCrash != 0 {
		t.Fatalf("expired counted on another resource: %+v", k)
	}
	c.open("lock:demo:x", 3, 2, "vc", Healthy, 0)
	c.open("lock:demo:x", 2, 3, "vd", Healthy, 0)
	if k, _ := c.phase(Crash); k.ExpiredAfterCrash != 1 {
		t.Fatalf("crash phase %+v, want 1 expiry", k)
	}
	if k, _ := c.totals(); k.ExpiredAfterCrash != 1 {
		t.Fatalf("total %+v, want 1 expiry", k)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	check := func(q float64, want time.Duration) {
		got := h.quantile(q)
		if got < want || float64(got) > float64(want)*1.05+1 {
			t.Errorf("q%.2f = %v, want %v (+5%%)", q, got, want)
		}
	}
	check(0.50, 50*time.Millisecond)
	check(0.99, 99*time.Millisecond)
	check(1, 100*time.Millisecond)
	h.record(100 * time.Hour) // beyond the last bucket: the maximum is still exact
	if got := h.quantile(1); got != 100*time.Hour {
		t.Fatalf("max %v", got)
	}
}

func TestPhaseDurations(t *testing.T) {
	c := &Controller{phases: []Scenario{Healthy, Slow, Crash}, cfg: Config{PhaseLength: time.Second}}
	got := c.phaseDurations(4500 * time.Millisecond)
	want := map[Scenario]time.Duration{Healthy: 2 * time.Second, Slow: 1500 * time.Millisecond, Crash: time.Second}
	for p, d := range want {
		if got[p] != d {
			t.Errorf("%s: %v, want %v", p, got[p], d)
		}
	}
}

// TestSummarySaysWhatAShortRunMissed: a mixed run that ended before its pause phase, and a
// crash phase without a crash, say so under the table instead of leaving zeros to explain.
func TestSummarySaysWhatAShortRunMissed(t *testing.T) {
	s := Summary{Scenario: Mixed, Phases: []PhaseSummary{
		{Scenario: Healthy, DurationS: 5},
		{Scenario: Crash, DurationS: 5},
		{Scenario: Pause, DurationS: 0},
	}}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"note: the run ended before the pause scenario began: run longer (--duration) to see it",
		"note: the crash scenario ran 5.0s without its fault",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "healthy scenario") {
		t.Errorf("a healthy phase has no fault to miss:\n%s", b.String())
	}
}

// TestCrashedHolderKeepsItsLock: a worker crashed holding its lock sends nothing more, its
// release included: the lock stays in Redis with its value until its TTL runs out (the
// crash scenario's promise; a release through locklib's release client once went through
// the dead gate and freed it at once).
func TestCrashedHolderKeepsItsLock(t *testing.T) {
	t.Parallel()
	e := embedded(t, 1)
	c, err := Start(Config{Servers: e.Servers(false), Scenario: Healthy, TTL: 2 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	rdb := redis.NewClient(embeddedClientOptions(e.Addrs()[0]))
	defer rdb.Close()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	freed := 0
	for time.Now().Before(deadline) {
		id := c.pickHolder("")
		if id == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w, _ := c.worker(id)
		key := w.snapshot().Resource
		if err := c.CrashWorker(id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // a command already past the gate completes
		before := rdb.Get(ctx, key).Val()
		if !strings.HasPrefix(before, w.name+":") {
			freed++ // it let go just before the crash, or the crash freed it: another try
			continue
		}
		time.Sleep(300 * time.Millisecond)
		if after := rdb.Get(ctx, key).Val(); after != before {
			t.Fatalf("%s's lock on %s: %q after the crash, %q 300 ms later, want it kept until its TTL", w.name, key, before, after)
		}
		return
	}
	t.Fatalf("%d crashed holders' locks were gone 50 ms after the crash, none kept", freed)
}
