package lockprom_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/internal/promtest"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
)

// exposition serves reg in the text format, gathered anew for each request.
func exposition(t *testing.T, reg *prometheus.Registry) http.Handler {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestUnderPrometheus has a real Prometheus scrape the adapter after a workload that moves
// every metric (obtained, taken, released, renewed, stolen so lost, still held, refused by
// the ACL): promtool check metrics passes on the exposition, and every panel of the Grafana
// dashboard (docs/grafana/lockscope.json) on the library's metrics is accepted by Prometheus,
// names only metrics the adapter serves, and shows data.
func TestUnderPrometheus(t *testing.T) {
	promtest.Require(t, "prometheus")
	srv := redistest.Start(t)
	m, reg := registry(t)
	c, ctx := newClient(t, srv.Client(), m), testCtx(t)

	l, err := c.Obtain(ctx, "lock:orders:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryObtain(ctx, "lock:orders:1", time.Minute); !errors.Is(err, locklib.ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := c.Obtain(ctx, "lock:jobs:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(ctx) }()
	stolen, err := c.Obtain(ctx, "lock:reports:1", 150*time.Millisecond, locklib.WithWatchdog())
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "a renewal", func() bool { return value(t, reg, "locklib_renewals_total") >= 1 })
	srv.Client().Set(ctx, "lock:reports:1", "someone else", time.Minute)
	waitLost(t, stolen)
	waitCounted(t, reg, "locklib_lost_total", "name=reports")
	// A user who may not run the scripts: a backend error on acquire (a reply, not a dead
	// server's retries).
	srv.SetUser("no-scripts", "on", ">pw", "~*", "+@connection")
	denied := newClient(t, srv.Client(func(o *redis.Options) { o.Username, o.Password = "no-scripts", "pw" }), m)
	if _, err := denied.TryObtain(ctx, "lock:billing:1", time.Minute); !errors.Is(err, locklib.ErrBackend) {
		t.Fatalf("TryObtain refused by the ACL = %v", err)
	}

	handler := exposition(t, reg)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.Bytes()
	if out, err := promtest.Promtool(t, body, "check", "metrics"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	target := httptest.NewServer(handler)
	defer target.Close()
	prom := promtest.Start(t, promtest.Config{Targets: []string{strings.TrimPrefix(target.URL, "http://")}})
	// Two scrapes: the panels' rate() needs two samples.
	prom.WaitFor("two scrapes", `count_over_time(locklib_held{name="jobs"}[1m])`, 20*time.Second,
		func(v []promtest.Sample) bool { return len(v) == 1 && v[0].Value >= 2 })
	d := promtest.ReadDashboard(t, filepath.Join("..", "..", "..", "docs", "grafana", "lockscope.json"))
	if n := promtest.CheckDashboardQueries(t, prom, d, "locklib_", promtest.MetricNames(body)); n < 12 {
		t.Errorf("dashboard: %d queries on the library's metrics, want the 12 and more it has", n)
	}
}
