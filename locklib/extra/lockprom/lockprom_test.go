package lockprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockprom"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// registry registers a new Metrics made with opts in a registry of its own.
func registry(t *testing.T, opts ...lockprom.Option) (*lockprom.Metrics, *prometheus.Registry) {
	t.Helper()
	m := lockprom.New(opts...)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	return m, reg
}

// families gathers reg by metric name.
func families(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value is the sum over name's series whose labels include every pair of labels ("k=v"):
// a counter's or gauge's value, a histogram's sample count.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range families(t, reg)[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for _, want := range labels {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName()+"="+l.GetValue() == want {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func expect(t *testing.T, reg *prometheus.Registry, want float64, name string, labels ...string) {
	t.Helper()
	if got := value(t, reg, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func newClient(t *testing.T, rdb redis.UniversalClient, m *lockprom.Metrics) *locklib.Client {
	t.Helper()
	c := locklib.New(rdb, locklib.WithObserver(m.Observe))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitLost(t *testing.T, l *locklib.Lock) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not lost")
	}
}

// waitCounted waits until name{labels} is 1: Lost() closes just before the lost Observation
// is made.
func waitCounted(t *testing.T, reg *prometheus.Registry, name string, labels ...string) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%s%v = 1", name, labels), func() bool { return value(t, reg, name, labels...) == 1 })
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestHeldReturnsToZero checks that the gauge of held locks counts every way a lock ends
// down exactly once, with the counters and the hold histogram that go with it.
func TestHeldReturnsToZero(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()

	t.Run("obtain and release", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		l, err := c.Obtain(ctx, "lock:plain:1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 1, "locklib_held", "name=plain")
		expect(t, reg, 1, "locklib_obtained_total", "name=plain")
		expect(t, reg, 1, "locklib_acquire_wait_seconds", "name=plain")
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 1, "locklib_releases_total", "name=plain", "result=ok")
		expect(t, reg, 1, "locklib_hold_seconds", "name=plain")
		_ = l.Release(ctx) // a second Release reaches no counter
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 1, "locklib_releases_total")
	})

	t.Run("re-entry levels", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		outer, err := c.Obtain(ctx, "lock:reentrant:1", time.Minute, locklib.Reentrant("w"))
		if err != nil {
			t.Fatal(err)
		}
		inner, err := c.Obtain(ctx, "lock:reentrant:1", time.Minute, locklib.Reentrant("w"))
		if err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 2, "locklib_held", "name=reentrant")
		if err := inner.Release(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 1, "locklib_held", "name=reentrant")
		if err := outer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 2, "locklib_releases_total", "result=ok")
	})

	t.Run("lost then released", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		l, err := c.Obtain(ctx, "lock:expiring:1", 50*time.Millisecond) // no watchdog: it runs out
		if err != nil {
			t.Fatal(err)
		}
		waitLost(t, l)
		waitCounted(t, reg, "locklib_lost_total", "name=expiring", "reason=validity_passed")
		expect(t, reg, 0, "locklib_held")
		// The key itself may outlive the local validity by a little: either answer is right.
		if err := l.Release(ctx); err != nil && !errors.Is(err, locklib.ErrNotHeld) {
			t.Fatalf("Release = %v, want nil or ErrNotHeld", err)
		}
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 1, "locklib_releases_total")
		expect(t, reg, 1, "locklib_hold_seconds") // once: at lost
	})

	t.Run("released when not held", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		l, err := c.Obtain(ctx, "lock:deleted:1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, "lock:deleted:1")
		if err := l.Release(ctx); !errors.Is(err, locklib.ErrNotHeld) {
			t.Fatalf("Release = %v, want ErrNotHeld", err)
		}
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 1, "locklib_releases_total", "name=deleted", "result=not_held")
		expect(t, reg, 0, "locklib_lost_total")
	})

	t.Run("watchdog", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		l, err := c.Obtain(ctx, "lock:watched:1", 150*time.Millisecond, locklib.WithWatchdog())
		if err != nil {
			t.Fatal(err)
		}
		redistest.Eventually(t, "two renewals", func() bool {
			return value(t, reg, "locklib_renewals_total", "name=watched") >= 2
		})
		expect(t, reg, 1, "locklib_held", "name=watched")
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 0, "locklib_held")
	})

	t.Run("watchdog refused", func(t *testing.T) {
		m, reg := registry(t)
		c, ctx := newClient(t, rdb, m), testCtx(t)
		l, err := c.Obtain(ctx, "lock:stolen:1", 150*time.Millisecond, locklib.WithWatchdog())
		if err != nil {
			t.Fatal(err)
		}
		rdb.Set(ctx, "lock:stolen:1", "someone else", time.Minute)
		waitLost(t, l)
		waitCounted(t, reg, "locklib_lost_total", "name=stolen", "reason=not_held")
		expect(t, reg, 1, "locklib_renewal_failures_total", "name=stolen", "reason=not_held")
		expect(t, reg, 0, "locklib_held")
		_ = l.Release(ctx)
		expect(t, reg, 0, "locklib_held")
	})

	t.Run("redlock", func(t *testing.T) {
		m, reg := registry(t)
		var clients []redis.UniversalClient
		for _, s := range redistest.StartN(t, 3) {
			clients = append(clients, s.Client())
		}
		c, err := locklib.NewRedlock(clients, locklib.WithObserver(m.Observe))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		ctx := testCtx(t)
		l, err := c.Obtain(ctx, "lock:quorum:1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.TryObtain(ctx, "lock:quorum:1", time.Minute); !errors.Is(err, locklib.ErrNotObtained) {
			t.Fatalf("TryObtain of a held lock = %v", err)
		}
		expect(t, reg, 1, "locklib_held", "name=quorum")
		expect(t, reg, 1, "locklib_not_obtained_total", "name=quorum", "reason=taken")
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, reg, 0, "locklib_held")
		expect(t, reg, 1, "locklib_releases_total", "name=quorum", "result=ok")
	})
}

// TestNotObtainedReasons checks the bounded reason of each way an Obtain gives up.
func TestNotObtainedReasons(t *testing.T) {
	srv := redistest.Start(t)
	m, reg := registry(t)
	c, ctx := newClient(t, srv.Client(), m), testCtx(t)
	l, err := c.Obtain(ctx, "lock:busy:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryObtain(ctx, "lock:busy:1", time.Minute); !errors.Is(err, locklib.ErrNotObtained) {
		t.Fatalf("TryObtain = %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c.Obtain(short, "lock:busy:1", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain = %v", err)
	}
	expect(t, reg, 1, "locklib_not_obtained_total", "name=busy", "reason=taken")
	expect(t, reg, 1, "locklib_not_obtained_total", "name=busy", "reason=context")
	expect(t, reg, 0, "locklib_backend_errors_total")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A user who may not run the scripts: every request fails with a reply (NOPERM), which,
	// unlike a dead server, ends the background clean-up at once too.
	srv.SetUser("no-scripts", "on", ">pw", "~*", "+@connection")
	denied := newClient(t, srv.Client(func(o *redis.Options) { o.Username, o.Password = "no-scripts", "pw" }), m)
	if _, err := denied.TryObtain(ctx, "lock:down:1", time.Minute); !errors.Is(err, locklib.ErrBackend) {
		t.Fatalf("TryObtain refused by the ACL = %v", err)
	}
	expect(t, reg, 1, "locklib_not_obtained_total", "name=down", "reason=backend")
	expect(t, reg, 1, "locklib_backend_errors_total", "name=down", "op=acquire")
	expect(t, reg, 0, "locklib_held")
}

// TestBackendErrorsByOp feeds the observer the renewal and release failures a server that
// stopped answering causes (their wiring is locklib's, tested there): each counts as a backend
// error of its operation, and the lock is counted down once.
func TestBackendErrorsByOp(t *testing.T) {
	m, reg := registry(t)
	backend := fmt.Errorf("%w: connection refused", locklib.ErrBackend)
	for _, o := range []locklib.Observation{
		{Type: locklib.EventAcquired, Key: "lock:jobs:1"},
		{Type: locklib.EventRenewFailed, Key: "lock:jobs:1", Err: backend},
		{Type: locklib.EventReleased, Key: "lock:jobs:1", Err: backend, Hold: time.Second},
	} {
		m.Observe(o)
	}
	expect(t, reg, 1, "locklib_backend_errors_total", "name=jobs", "op=renew")
	expect(t, reg, 1, "locklib_backend_errors_total", "name=jobs", "op=release")
	expect(t, reg, 1, "locklib_renewal_failures_total", "name=jobs", "reason=backend")
	expect(t, reg, 1, "locklib_releases_total", "name=jobs", "result=backend")
	expect(t, reg, 0, "locklib_held")
}

// TestNamesStayBounded pushes 100,000 distinct keys (10,000 with a name func of its own)
// through the observer: the series stay at
// the cap on names (plus "_other"), and no label carries a key.
func TestNamesStayBounded(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		opts  []lockprom.Option
		keys  int
		names int
	}{
		{"default", nil, 100_000, 100},
		{"capped name func", []lockprom.Option{lockprom.WithName(func(key string) string { return key }),
			lockprom.WithMaxNames(10)}, 10_000, 10},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m, reg := registry(t, tc.opts...)
			for i := range tc.keys {
				key := fmt.Sprintf("lock:group%d:%d", i, i)
				m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: key, Token: int64(i + 1), Wait: time.Millisecond})
				m.Observe(locklib.Observation{Type: locklib.EventReleased, Key: key, Hold: time.Second})
			}
			fams := families(t, reg)
			for _, name := range []string{"locklib_held", "locklib_obtained_total", "locklib_acquire_wait_seconds",
				"locklib_hold_seconds", "locklib_releases_total"} {
				if got := len(fams[name].GetMetric()); got != tc.names+1 {
					t.Errorf("%s has %d series, want %d (the cap, and _other)", name, got, tc.names+1)
				}
			}
			expect(t, reg, float64(tc.keys-tc.names), "locklib_names_folded")
			expect(t, reg, float64(tc.keys-tc.names), "locklib_obtained_total", "name=_other")
			expect(t, reg, 0, "locklib_held")
			if tc.opts == nil {
				for _, mf := range fams {
					for _, s := range mf.GetMetric() {
						for _, l := range s.GetLabel() {
							if strings.Contains(l.GetValue(), ":") {
								t.Fatalf("%s has a key in a label: %s=%q", mf.GetName(), l.GetName(), l.GetValue())
							}
						}
					}
				}
			}
		})
	}
}

// TestNameFuncMadeSafe: whatever WithName's func returns becomes a valid label value. A name
// that is not valid UTF-8 made client_golang's WithLabelValues panic inside Obtain.
func TestNameFuncMadeSafe(t *testing.T) {
	m, reg := registry(t, lockprom.WithName(func(key string) string { return strings.TrimPrefix(key, "lock:") }))
	for _, key := range []string{"lock:bad\xff", "lock:", "lock:" + strings.Repeat("x", 1000)} {
		m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: key, Wait: time.Millisecond})
	}
	for _, s := range families(t, reg)["locklib_obtained_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if v := l.GetValue(); !utf8.ValidString(v) || v == "" || len(v) > keygroup.MaxLen {
				t.Errorf("label %s=%q: want valid UTF-8, not empty, at most %d bytes", l.GetName(), v, keygroup.MaxLen)
			}
		}
	}
}

// TestHistogramsRecordTheDurations: the wait and hold histograms record the Observation's
// Wait and Hold in seconds (their counts alone were checked: recording 0 passed every test).
func TestHistogramsRecordTheDurations(t *testing.T) {
	m, reg := registry(t)
	m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: "lock:timed:1", Wait: 1500 * time.Millisecond, Latency: time.Millisecond})
	m.Observe(locklib.Observation{Type: locklib.EventReleased, Key: "lock:timed:1", Hold: 2250 * time.Millisecond, Latency: time.Millisecond})
	m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: "lock:timed:2", Wait: 0})
	m.Observe(locklib.Observation{Type: locklib.EventLost, Key: "lock:timed:2", Hold: 500 * time.Millisecond})
	fams := families(t, reg)
	for name, want := range map[string]struct {
		sum     float64
		le      float64
		belowLe uint64 // samples at or below le
	}{
		"locklib_acquire_wait_seconds": {1.5, 1, 1},  // 0 and 1.5
		"locklib_hold_seconds":         {2.75, 1, 1}, // 0.5 and 2.25
	} {
		h := fams[name].GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != want.sum {
			t.Errorf("%s: %d samples summing to %v, want 2 summing to %v", name, h.GetSampleCount(), h.GetSampleSum(), want.sum)
		}
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == want.le && b.GetCumulativeCount() != want.belowLe {
				t.Errorf("%s: %d samples at or below %v s, want %d", name, b.GetCumulativeCount(), want.le, want.belowLe)
			}
		}
	}
}
