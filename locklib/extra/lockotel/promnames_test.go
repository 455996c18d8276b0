package lockotel_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/extra/lockotel"
	"github.com/lockscope/lockscope/locklib/internal/libmetrics"
)

// TestPrometheusNames checks that OpenTelemetry's Prometheus exporter shows the instruments
// under lockprom's names and labels, so that one dashboard reads either adapter.
func TestPrometheusNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(t.Context())
	m, err := lockotel.NewMetrics(lockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	backend := fmt.Errorf("%w: refused", locklib.ErrBackend)
	for _, o := range []locklib.Observation{ // one of each, so that every instrument has a point
		{Type: locklib.EventAcquired, Key: "lock:orders:1"},
		{Type: locklib.EventNotObtained, Key: "lock:orders:1", Err: backend},
		{Type: locklib.EventRenewed, Key: "lock:orders:1"},
		{Type: locklib.EventRenewFailed, Key: "lock:orders:1", Err: backend},
		{Type: locklib.EventLost, Key: "lock:orders:1", Err: fmt.Errorf("%w: %w", locklib.ErrLost, locklib.ErrNotHeld), Hold: time.Second},
		{Type: locklib.EventReleased, Key: "lock:orders:1", WasLost: true},
	} {
		m.Observe(o)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		sort.Strings(labels)
		got = append(got, fmt.Sprintf("%s %s %v", mf.GetName(), mf.GetType(), labels))
	}
	var want []string // lockprom's names, types and labels
	spec := func(s libmetrics.Spec, kind string, labels ...string) {
		if s.Label != "" {
			labels = append(labels, s.Label)
		}
		sort.Strings(labels)
		want = append(want, fmt.Sprintf("%s %s %v", s.Prom, kind, labels))
	}
	for _, s := range libmetrics.Counters {
		spec(s, "COUNTER", libmetrics.NameLabel)
	}
	for _, s := range libmetrics.Histograms {
		spec(s, "HISTOGRAM", libmetrics.NameLabel)
	}
	spec(libmetrics.HeldSpec, "GAUGE", libmetrics.NameLabel)
	spec(libmetrics.FoldedSpec, "GAUGE")
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("OpenTelemetry's Prometheus exporter shows\n  %s\nwant lockprom's\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
