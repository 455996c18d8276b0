package promtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A target for the harness's own test; the exporter's end-to-end test scrapes the real one.
const probeMetrics = "# HELP promtest_probe A value for the harness test.\n# TYPE promtest_probe gauge\npromtest_probe{kind=\"a\"} 42\n"

func TestServerScrapesAndAnswersQueries(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, probeMetrics)
	}))
	defer target.Close()
	s := Start(t, Config{Targets: []string{strings.TrimPrefix(target.URL, "http://")}})

	got := s.WaitFor("the probe scraped", `promtest_probe{job="lockscope"}`, 20*time.Second,
		func(v []Sample) bool { return len(v) == 1 })
	if got[0].Value != 42 || got[0].Metric["kind"] != "a" {
		t.Errorf("promtest_probe = %+v, want kind=a 42", got[0])
	}
	ctx := context.Background()
	if v, err := s.Query(ctx, "1 + 1"); err != nil || len(v) != 1 || v[0].Value != 2 {
		t.Errorf("scalar 1 + 1 = %v, %v", v, err)
	}
	var qe *QueryError
	if _, err := s.Query(ctx, "sum(("); !errors.As(err, &qe) || qe.Type != "bad_data" {
		t.Errorf("a malformed expression: %v, want a bad_data QueryError", err)
	}
	if _, err := s.Query(ctx, "promtest_probe[1m]"); err == nil || !strings.Contains(err.Error(), "matrix") {
		t.Errorf("a range vector: %v, want an error naming the matrix result", err)
	}
	t.Run("CheckDashboardQueries", func(t *testing.T) { checkDashboardQueries(t, s) })
}

func TestPromtoolCheckMetrics(t *testing.T) {
	if out, err := Promtool(t, []byte(probeMetrics), "check", "metrics"); err != nil {
		t.Errorf("clean metrics refused: %v", err)
	} else if strings.TrimSpace(out) != "" {
		t.Errorf("clean metrics: output %q", out)
	}
	// A counter without _total is a lint problem promtool must report.
	bad := "# HELP promtest_things Things.\n# TYPE promtest_things counter\npromtest_things 3\n"
	if out, err := Promtool(t, []byte(bad), "check", "metrics"); err == nil || !strings.Contains(out, "_total") {
		t.Errorf("a counter without _total: err %v, output %q", err, out)
	}
}

// recorder is a testing.TB that keeps what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// checkDashboardQueries, on a server that scrapes the probe, reports a dashboard's unknown
// metric names, refused queries and panels without data, and only those.
func checkDashboardQueries(t *testing.T, s *Server) {
	known := MetricNames([]byte(probeMetrics))
	if !known["promtest_probe"] || len(known) != 1 {
		t.Fatalf("MetricNames = %v", known)
	}
	panel := func(title string, exprs ...string) Panel {
		p := Panel{Title: title}
		for _, e := range exprs {
			p.Targets = append(p.Targets, struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			}{"A", e})
		}
		return p
	}
	d := Dashboard{Panels: []Panel{
		panel("good", `sum by (kind) (promtest_probe{job=~"$job"})`, `rate(promtest_probe[$__rate_interval])`),
		panel("unknown name", `promtest_prob`),
		panel("refused", `sum by (kind (promtest_probe)`),
		panel("other prefix, not checked", `up{job="x"} +`),
	}}
	r := &recorder{TB: t}
	if n := CheckDashboardQueries(r, s, d, "promtest_", known); n != 4 {
		t.Errorf("checked %d queries, want 4", n)
	}
	want := []string{`"unknown name": promtest_prob is not a metric`, `"unknown name": no data`, `"refused": Prometheus refuses`, `"refused": no data`}
	if len(r.errors) != len(want) {
		t.Fatalf("reported %q, want %d errors", r.errors, len(want))
	}
	for i, w := range want {
		if !strings.Contains(r.errors[i], w) {
			t.Errorf("error %d: %q, want it to say %q", i, r.errors[i], w)
		}
	}
}
