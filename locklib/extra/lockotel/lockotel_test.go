package lockotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// meters is a Metrics over a MeterProvider of its own, read by hand.
type meters struct {
	*lockotel.Metrics
	reader *sdkmetric.ManualReader
}

func newMeters(t *testing.T, opts ...lockotel.Option) meters {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := lockotel.NewMetrics(append([]lockotel.Option{lockotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return meters{m, reader}
}

// points collects the instrument name's data points as (attributes, value): a counter's
// or gauge's value, a histogram's count.
func (m meters) points(t *testing.T, name string) map[attribute.Distinct]pointValue {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[attribute.Distinct]pointValue{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] = pointValue{p.Attributes, float64(p.Value)}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] = pointValue{p.Attributes, float64(p.Value)}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Equivalent()] = pointValue{p.Attributes, float64(p.Count)}
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, mt.Data)
			}
		}
	}
	return out
}

type pointValue struct {
	attrs attribute.Set
	value float64
}

// value sums name's points whose attributes include every one of attrs ("k=v").
func (m meters) value(t *testing.T, name string, attrs ...string) float64 {
	t.Helper()
	sum := 0.0
	for _, p := range m.points(t, name) {
		matches := true
		for _, want := range attrs {
			found := false
			for _, kv := range p.attrs.ToSlice() {
				found = found || string(kv.Key)+"="+kv.Value.String() == want
			}
			matches = matches && found
		}
		if matches {
			sum += p.value
		}
	}
	return sum
}

func (m meters) expect(t *testing.T, want float64, name string, attrs ...string) {
	t.Helper()
	if got := m.value(t, name, attrs...); got != want {
		t.Errorf("%s%v = %v, want %v", name, attrs, got, want)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitLost(t *testing.T, l *locklib.Lock) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not lost")
	}
}

// TestHeldReturnsToZero drives a lock to each of its endings and checks that locklib.held
// is back at 0 after each, with the outcome counted.
func TestHeldReturnsToZero(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	for _, tc := range []struct {
		desc    string
		key     string
		endings func(t *testing.T, c *locklib.Client, ctx context.Context, key string)
		counted string // a counter the ending must have counted once, "name{k=v}"
	}{
		{"released", "lock:plain:1", func(t *testing.T, c *locklib.Client, ctx context.Context, key string) {
			release(t, ctx, obtain(t, c, ctx, key), nil)
		}, "locklib.releases{result=ok}"},
		{"re-entry levels", "lock:reentrant:1", func(t *testing.T, c *locklib.Client, ctx context.Context, key string) {
			outer := obtain(t, c, ctx, key, locklib.Reentrant("w"))
			release(t, ctx, obtain(t, c, ctx, key, locklib.Reentrant("w")), nil)
			release(t, ctx, outer, nil)
		}, "locklib.obtained{}"},
		{"lost, then released", "lock:expiring:1", func(t *testing.T, c *locklib.Client, ctx context.Context, key string) {
			l := obtain(t, c, ctx, key)
			waitLost(t, l)
			_ = l.Release(ctx) // ErrNotHeld, or nil when the key outlived the local validity
		}, "locklib.lost{reason=validity_passed}"},
		{"released when not held", "lock:deleted:1", func(t *testing.T, c *locklib.Client, ctx context.Context, key string) {
			l := obtain(t, c, ctx, key)
			rdb.Del(ctx, key)
			release(t, ctx, l, locklib.ErrNotHeld)
		}, "locklib.releases{result=not_held}"},
		{"watchdog refused", "lock:stolen:1", func(t *testing.T, c *locklib.Client, ctx context.Context, key string) {
			l := obtain(t, c, ctx, key, locklib.WithWatchdog())
			rdb.Set(ctx, key, "someone else", time.Minute)
			waitLost(t, l)
			release(t, ctx, l, locklib.ErrNotHeld)
		}, "locklib.renewal_failures{reason=not_held}"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m := newMeters(t)
			c := locklib.New(rdb, locklib.WithObserver(m.Observe))
			defer c.Close()
			tc.endings(t, c, testCtx(t), tc.key)
			redistest.Eventually(t, tc.counted, func() bool { return m.value(t, counterName(tc.counted), counterAttrs(tc.counted)...) >= 1 })
			m.expect(t, 0, "locklib.held")
		})
	}

	t.Run("redlock", func(t *testing.T) {
		m := newMeters(t)
		var clients []redis.UniversalClient
		for _, s := range redistest.StartN(t, 3) {
			clients = append(clients, s.Client())
		}
		c, err := locklib.NewRedlock(clients, locklib.WithObserver(m.Observe))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := testCtx(t)
		l := obtain(t, c, ctx, "lock:quorum:1")
		if _, err := c.TryObtain(ctx, "lock:quorum:1", time.Minute); !errors.Is(err, locklib.ErrNotObtained) {
			t.Fatalf("TryObtain of a held lock = %v", err)
		}
		m.expect(t, 1, "locklib.held", "name=quorum")
		m.expect(t, 1, "locklib.not_obtained", "name=quorum", "reason=taken")
		release(t, ctx, l, nil)
		m.expect(t, 0, "locklib.held")
		m.expect(t, 1, "locklib.acquire.wait", "name=quorum")
		m.expect(t, 1, "locklib.hold", "name=quorum")
	})
}

// counterName and counterAttrs split "name{k=v}".
func counterName(s string) string {
	for i := range s {
		if s[i] == '{' {
			return s[:i]
		}
	}
	return s
}

func counterAttrs(s string) []string {
	inner := s[len(counterName(s)):]
	if len(inner) <= 2 {
		return nil
	}
	return []string{inner[1 : len(inner)-1]}
}

func obtain(t *testing.T, c *locklib.Client, ctx context.Context, key string, opts ...locklib.LockOption) *locklib.Lock {
	t.Helper()
	l, err := c.Obtain(ctx, key, 150*time.Millisecond, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func release(t *testing.T, ctx context.Context, l *locklib.Lock, want error) {
	t.Helper()
	if err := l.Release(ctx); !errors.Is(err, want) && (want != nil || err != nil) {
		t.Fatalf("Release = %v, want %v", err, want)
	}
}

// TestNamesStayBounded pushes 100,000 distinct keys through the observer: every instrument
// has the cap's names and "_other", no more.
func TestNamesStayBounded(t *testing.T) {
	const keys = 100_000
	m := newMeters(t)
	for i := range keys {
		key := fmt.Sprintf("lock:group%d:%d", i, i)
		m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: key, Token: int64(i + 1), Wait: time.Millisecond})
		m.Observe(locklib.Observation{Type: locklib.EventReleased, Key: key, Hold: time.Second})
	}
	for _, name := range []string{"locklib.held", "locklib.obtained", "locklib.acquire.wait", "locklib.hold", "locklib.releases"} {
		if got := len(m.points(t, name)); got != 101 {
			t.Errorf("%s has %d series, want 101 (the cap, and _other)", name, got)
		}
	}
	m.expect(t, keys-100, "locklib.names.folded")
	m.expect(t, keys-100, "locklib.obtained", "name=_other")
	m.expect(t, 0, "locklib.held")
}

// TestTracer checks the spans against a real server: children of the caller's span, the
// Redis requests under them, the outcome and the wait as attributes, the key nowhere.
func TestTracer(t *testing.T) {
	srv := redistest.Start(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	// ContextTimeoutEnabled: Release sends on rdb itself (see docs/locklib.md, "Tracing").
	rdb := srv.Client(func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	requests := &spanOfRequests{}
	rdb.AddHook(redistest.RequestHook(requests.ran))
	c := locklib.New(rdb, locklib.WithTracer(lockotel.NewTracer(lockotel.WithTracerProvider(tp))))
	defer c.Close()

	ctx, parent := tp.Tracer("test").Start(testCtx(t), "request")
	l, err := c.Obtain(ctx, "lock:orders:42", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryObtain(ctx, "lock:orders:42", time.Minute); !errors.Is(err, locklib.ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock = %v", err)
	}
	release(t, ctx, l, nil)
	release(t, ctx, l, locklib.ErrNotHeld) // refused before Redis: no span
	parent.End()

	ended := spans.Ended()
	want := []struct {
		name, outcome string
		status        codes.Code
	}{
		{"locklib.Obtain", "obtained", codes.Unset},
		{"locklib.TryObtain", "taken", codes.Error},
		{"locklib.Release", "ok", codes.Unset},
		{"request", "", codes.Unset},
	}
	if len(ended) != len(want) {
		t.Fatalf("%d spans ended, want %d", len(ended), len(want))
	}
	for i, w := range want[:3] {
		s := ended[i]
		attrs := attribute.NewSet(s.Attributes()...)
		if s.Name() != w.name || s.Status().Code != w.status || attrValue(attrs, "lock.outcome") != w.outcome ||
			attrValue(attrs, "lock.name") != "orders" {
			t.Errorf("span %d: %s status %v attributes %v; want %s, %v, outcome %s, name orders",
				i, s.Name(), s.Status(), s.Attributes(), w.name, w.status, w.outcome)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the caller's span", s.Name())
		}
		if requests.count(s.SpanContext().SpanID()) == 0 {
			t.Errorf("no Redis request ran under %s", s.Name())
		}
		for _, kv := range s.Attributes() {
			if kv.Value.String() == "lock:orders:42" {
				t.Errorf("%s records the key in %s", s.Name(), kv.Key)
			}
		}
	}
	for _, s := range ended[:2] {
		attrs := attribute.NewSet(s.Attributes()...)
		if wait, _ := attrs.Value("lock.wait_seconds"); wait.AsFloat64() <= 0 || attrValue(attrs, "lock.attempts") != "1" {
			t.Errorf("%s's span lacks the wait or the attempts: %v", s.Name(), s.Attributes())
		}
	}
	released := attribute.NewSet(ended[2].Attributes()...)
	if _, ok := released.Value("lock.hold_seconds"); !ok {
		t.Errorf("Release's span lacks the hold: %v", ended[2].Attributes())
	}
}

func attrValue(s attribute.Set, key attribute.Key) string {
	v, _ := s.Value(key)
	return v.String()
}

// spanOfRequests counts the requests run under each span (ran is a redistest.RequestHook).
type spanOfRequests struct {
	mu     sync.Mutex
	bySpan map[trace.SpanID]int
}

func (r *spanOfRequests) ran(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bySpan == nil {
		r.bySpan = map[trace.SpanID]int{}
	}
	r.bySpan[trace.SpanContextFromContext(ctx).SpanID()]++
}

func (r *spanOfRequests) count(id trace.SpanID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bySpan[id]
}

// TestHistogramsRecordTheDurations: the wait and hold histograms record the Observation's
// Wait and Hold in seconds (their counts alone were checked: recording 0 passed every test).
func TestHistogramsRecordTheDurations(t *testing.T) {
	m := newMeters(t)
	m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: "lock:timed:1", Wait: 1500 * time.Millisecond, Latency: time.Millisecond})
	m.Observe(locklib.Observation{Type: locklib.EventReleased, Key: "lock:timed:1", Hold: 2250 * time.Millisecond, Latency: time.Millisecond})
	m.Observe(locklib.Observation{Type: locklib.EventAcquired, Key: "lock:timed:2", Wait: 0})
	m.Observe(locklib.Observation{Type: locklib.EventLost, Key: "lock:timed:2", Hold: 500 * time.Millisecond})
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"locklib.acquire.wait": 1.5, "locklib.hold": 2.75}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			sum, ok := want[mt.Name]
			if !ok {
				continue
			}
			delete(want, mt.Name)
			points := mt.Data.(metricdata.Histogram[float64]).DataPoints
			if len(points) != 1 || points[0].Count != 2 || points[0].Sum != sum {
				t.Errorf("%s: %+v, want one point of 2 samples summing to %v", mt.Name, points, sum)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no data for %v", want)
	}
}
