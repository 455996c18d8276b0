// Package lockprom serves locklib's metrics to Prometheus: wait and hold time histograms,
// counters of outcomes, renewals, losses and releases, and a gauge of locks held, all from
// locklib's Observer.
//
//	metrics := lockprom.New()
//	prometheus.MustRegister(metrics)
//	client := locklib.New(rdb, locklib.WithObserver(metrics.Observe))
//
// Every metric has a "name" label: the lock's name from WithName's func (default: the key's
// group by keygroup.Default, lock:orders:42 → orders), capped at WithMaxNames distinct
// names (default 100; later names fold into "_other"), so the series stay bounded whatever
// the keys. The raw key, the value and the token are never labels. One Metrics can serve
// every Client of a process; docs/locklib.md ("Metrics and tracing") lists the metrics.
package lockprom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/internal/libmetrics"
)

// Metrics is a prometheus.Collector of locklib's metrics; pass its Observe to
// locklib.WithObserver.
type Metrics struct {
	namer    *libmetrics.Namer
	counters [len(libmetrics.Counters)]*prometheus.CounterVec
	hists    [len(libmetrics.Histograms)]*prometheus.HistogramVec
	held     *prometheus.GaugeVec
	folded   prometheus.GaugeFunc
}

// Option configures New.
type Option func(*options)

type options struct {
	name     func(key string) string
	maxNames int
}

// WithName names a lock by f(key) in the "name" label instead of by its keygroup.Default
// group. The cap (WithMaxNames) still holds whatever f returns; never return the raw key or
// anything else unbounded, or every name past the cap folds into "_other". Its result is made
// a valid label value as groups are (keygroup.Safe: printable UTF-8, at most 64 bytes, "_"
// for "").
func WithName(f func(key string) string) Option { return func(o *options) { o.name = f } }

// WithMaxNames caps the distinct names at n (default 100); n <= 0 keeps the default.
func WithMaxNames(n int) Option { return func(o *options) { o.maxNames = n } }

// New returns the metrics, to be registered (prometheus.MustRegister) once per process.
func New(opts ...Option) *Metrics {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m := &Metrics{namer: libmetrics.NewNamer(o.name, o.maxNames)}
	for i, s := range libmetrics.Counters {
		m.counters[i] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: s.Prom, Help: s.Help}, labels(s))
	}
	for i, s := range libmetrics.Histograms {
		m.hists[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: s.Prom, Help: s.Help, Buckets: s.Buckets}, labels(s))
	}
	held := libmetrics.HeldSpec
	m.held = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: held.Prom, Help: held.Help}, labels(held))
	folded := libmetrics.FoldedSpec
	m.folded = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: folded.Prom, Help: folded.Help},
		func() float64 { return float64(m.namer.Folded()) })
	return m
}

func labels(s libmetrics.Spec) []string {
	if s.Label == "" {
		return []string{libmetrics.NameLabel}
	}
	return []string{libmetrics.NameLabel, s.Label}
}

// Observe records o; it is the function to pass to locklib.WithObserver.
func (m *Metrics) Observe(o locklib.Observation) { libmetrics.Record(sink{m}, m.namer, o) }

func (m *Metrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.held, m.folded}
	for _, c := range m.counters {
		cs = append(cs, c)
	}
	for _, h := range m.hists {
		cs = append(cs, h)
	}
	return cs
}

// Describe is prometheus.Collector's.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect is prometheus.Collector's.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// sink is libmetrics.Sink over the Metrics' vectors.
type sink struct{ m *Metrics }

func (s sink) Count(c libmetrics.Counter, name, label string) {
	if label == "" {
		s.m.counters[c].WithLabelValues(name).Inc()
		return
	}
	s.m.counters[c].WithLabelValues(name, label).Inc()
}

func (s sink) Observe(h libmetrics.Histogram, name string, d time.Duration) {
	s.m.hists[h].WithLabelValues(name).Observe(d.Seconds())
}

func (s sink) Held(name string, delta int64) { s.m.held.WithLabelValues(name).Add(float64(delta)) }
