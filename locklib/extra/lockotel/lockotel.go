// Package lockotel gives locklib OpenTelemetry metrics and spans.
//
// Metrics come from locklib's Observer: the same metrics as locklib/extra/lockprom, as
// OpenTelemetry instruments (locklib.acquire.wait, locklib.hold, locklib.obtained, ...,
// locklib.held):
//
//	metrics, err := lockotel.NewMetrics() // the global MeterProvider, or WithMeterProvider
//	client := locklib.New(rdb, locklib.WithObserver(metrics.Observe))
//
// Spans come from locklib's Tracer hook: Obtain, TryObtain and Release as spans
// ("locklib.Obtain", ...) that are children of the caller's span, with the Redis requests
// under them, the wait, the outcome and the lock's name as attributes:
//
//	client := locklib.New(rdb, locklib.WithTracer(lockotel.NewTracer()))
//
// Both name a lock by WithName's func (default: the key's group by keygroup.Default,
// lock:orders:42 → orders), capped at WithMaxNames distinct names (default 100; later names
// fold into "_other"). The raw key, the value, the token and the error's text (which names
// the key) are never recorded. docs/locklib.md ("Metrics and tracing") lists the metrics and
// attributes.
package lockotel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/internal/libmetrics"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/lockscope/lockscope/locklib/extra/lockotel"

// Option configures NewMetrics and NewTracer.
type Option func(*config)

type config struct {
	meters   metric.MeterProvider
	tracers  trace.TracerProvider
	name     func(key string) string
	maxNames int
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.tracers == nil {
		c.tracers = otel.GetTracerProvider()
	}
	return c
}

// WithMeterProvider makes NewMetrics use mp instead of the global MeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.meters = mp } }

// WithTracerProvider makes NewTracer use tp instead of the global TracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tracers = tp } }

// WithName names a lock by f(key) (the "name" attribute of the metrics, "lock.name" of the
// spans) instead of by its keygroup.Default group. The cap (WithMaxNames) still holds
// whatever f returns, and its result is made safe as groups are (keygroup.Safe: printable
// UTF-8, at most 64 bytes, "_" for "").
func WithName(f func(key string) string) Option { return func(c *config) { c.name = f } }

// WithMaxNames caps the distinct names at n (default 100); n <= 0 keeps the default.
func WithMaxNames(n int) Option { return func(c *config) { c.maxNames = n } }

// Metrics records locklib's Observations as OpenTelemetry metrics; pass its Observe to
// locklib.WithObserver.
type Metrics struct {
	namer    *libmetrics.Namer
	counters [len(libmetrics.Counters)]metric.Int64Counter
	hists    [len(libmetrics.Histograms)]metric.Float64Histogram
	held     metric.Int64UpDownCounter
	// attrs caches each (label, name, value)'s attribute set: building one costs more than
	// recording. Bounded as the names and values are.
	attrsMu sync.RWMutex
	attrs   map[attrsKey]metric.MeasurementOption
}

type attrsKey struct{ label, name, value string }

// attributes is the option that records name, and label=value unless label is "".
func (m *Metrics) attributes(name, label, value string) metric.MeasurementOption {
	k := attrsKey{label, name, value}
	m.attrsMu.RLock()
	o, ok := m.attrs[k]
	m.attrsMu.RUnlock()
	if ok {
		return o
	}
	kvs := []attribute.KeyValue{attribute.String(libmetrics.NameLabel, name)}
	if label != "" {
		kvs = append(kvs, attribute.String(label, value))
	}
	o = metric.WithAttributeSet(attribute.NewSet(kvs...))
	m.attrsMu.Lock()
	m.attrs[k] = o
	m.attrsMu.Unlock()
	return o
}

// NewMetrics makes the instruments; one Metrics can serve every Client of a process.
func NewMetrics(opts ...Option) (*Metrics, error) {
	cfg := newConfig(opts)
	meter := cfg.meters.Meter(ScopeName)
	m := &Metrics{namer: libmetrics.NewNamer(cfg.name, cfg.maxNames), attrs: map[attrsKey]metric.MeasurementOption{}}
	var err error
	for i, s := range libmetrics.Counters {
		if m.counters[i], err = meter.Int64Counter(s.OTel, metric.WithUnit(s.Unit), metric.WithDescription(s.Help)); err != nil {
			return nil, err
		}
	}
	for i, s := range libmetrics.Histograms {
		if m.hists[i], err = meter.Float64Histogram(s.OTel, metric.WithUnit(s.Unit), metric.WithDescription(s.Help),
			metric.WithExplicitBucketBoundaries(s.Buckets...)); err != nil {
			return nil, err
		}
	}
	held := libmetrics.HeldSpec
	if m.held, err = meter.Int64UpDownCounter(held.OTel, metric.WithUnit(held.Unit), metric.WithDescription(held.Help)); err != nil {
		return nil, err
	}
	folded := libmetrics.FoldedSpec
	_, err = meter.Int64ObservableGauge(folded.OTel, metric.WithUnit(folded.Unit), metric.WithDescription(folded.Help),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(m.namer.Folded()))
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Observe records o; it is the function to pass to locklib.WithObserver.
func (m *Metrics) Observe(o locklib.Observation) { libmetrics.Record(sink{m}, m.namer, o) }

// sink is libmetrics.Sink over the Metrics' instruments. The Observer has no context: the
// instruments get context.Background().
type sink struct{ m *Metrics }

func (s sink) Count(c libmetrics.Counter, name, label string) {
	labelKey := libmetrics.Counters[c].Label
	if label == "" {
		labelKey = ""
	}
	s.m.counters[c].Add(context.Background(), 1, s.m.attributes(name, labelKey, label))
}

func (s sink) Observe(h libmetrics.Histogram, name string, d time.Duration) {
	s.m.hists[h].Record(context.Background(), d.Seconds(), s.m.attributes(name, "", ""))
}

func (s sink) Held(name string, delta int64) {
	s.m.held.Add(context.Background(), delta, s.m.attributes(name, "", ""))
}

// The span attributes.
const (
	attrName     = attribute.Key("lock.name")         // the bounded name, as the metrics' "name"
	attrOutcome  = attribute.Key("lock.outcome")      // obtained, or the bounded reason (taken, context, backend, ...; ok, not_held for Release)
	attrWait     = attribute.Key("lock.wait_seconds") // Obtain, TryObtain
	attrAttempts = attribute.Key("lock.attempts")     // Obtain, TryObtain
	attrHold     = attribute.Key("lock.hold_seconds") // Release
	attrWasLost  = attribute.Key("lock.was_lost")     // Release of a lock lost before
)

// NewTracer returns the locklib.Tracer to pass to locklib.WithTracer: every Obtain,
// TryObtain and Release becomes a span "locklib.<call>", a child of the span in the
// caller's context; the call's Redis requests run under it. A call that returns an error
// (not obtained, ErrNotHeld, a backend error) ends its span with status Error and the
// outcome as description.
func NewTracer(opts ...Option) locklib.Tracer {
	cfg := newConfig(opts)
	tracer := cfg.tracers.Tracer(ScopeName)
	namer := libmetrics.NewNamer(cfg.name, cfg.maxNames)
	return func(ctx context.Context, call, key string) (context.Context, func(locklib.Observation)) {
		ctx, span := tracer.Start(ctx, "locklib."+call, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrName.String(namer.Name(key))))
		return ctx, func(o locklib.Observation) { endSpan(span, o) }
	}
}

func endSpan(span trace.Span, o locklib.Observation) {
	outcome := libmetrics.Reason(o.Err)
	switch o.Type {
	case locklib.EventAcquired:
		outcome = "obtained"
		span.SetAttributes(attrWait.Float64(o.Wait.Seconds()), attrAttempts.Int(o.Attempts))
	case locklib.EventNotObtained:
		span.SetAttributes(attrWait.Float64(o.Wait.Seconds()), attrAttempts.Int(o.Attempts))
	case locklib.EventReleased:
		span.SetAttributes(attrHold.Float64(o.Hold.Seconds()))
		if o.WasLost {
			span.SetAttributes(attrWasLost.Bool(true))
		}
	}
	span.SetAttributes(attrOutcome.String(outcome))
	if o.Err != nil {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
