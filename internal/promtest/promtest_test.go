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
