package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Dashboard is what the checks read of a Grafana dashboard JSON model.
type Dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {"query": ...} for a Prometheus query variable
		} `json:"list"`
	} `json:"templating"`
}

// Panel is one panel of a Dashboard; a row's Panels are those it holds collapsed.
type Panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	GridPos    struct{ H, W int }
	Datasource map[string]any `json:"datasource"`
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []Panel `json:"panels"`
}

// ReadDashboard reads a dashboard JSON file and fails the test unless it has Grafana's
// dashboard shape: a title, a uid and a schema version; panels with a type, a place on the
// grid, a data source and queries, each with a refId and an expression.
func ReadDashboard(tb testing.TB, path string) Dashboard {
	tb.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var d Dashboard
	if err := json.Unmarshal(text, &d); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		tb.Errorf("%s: title %q, uid %q, schemaVersion %d, %d panels", path, d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	for _, p := range d.AllPanels() {
		if p.Type == "row" {
			continue
		}
		if p.Type == "" || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.Datasource == nil || len(p.Targets) == 0 {
			tb.Errorf("%s: %s: type %q, gridPos %dx%d, datasource %v, %d targets", path, p, p.Type, p.GridPos.W, p.GridPos.H, p.Datasource, len(p.Targets))
		}
		for _, target := range p.Targets {
			if target.RefID == "" || target.Expr == "" {
				tb.Errorf("%s: %s: a target with refId %q, expr %q", path, p, target.RefID, target.Expr)
			}
		}
	}
	return d
}

func (p Panel) String() string { return fmt.Sprintf("panel %d %q", p.ID, p.Title) }

// AllPanels are the dashboard's panels, rows and those of collapsed rows included.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	for _, p := range d.Panels {
		out = append(append(out, p), p.Panels...)
	}
	return out
}

// dashboardVariables are what the checks put for the dashboard's variables: every job, group
// and lock name, Grafana's rate interval for a 1 s scrape.
var dashboardVariables = strings.NewReplacer(`$job`, `.*`, `$group`, `.*`, `$name`, `.*`, `$__rate_interval`, `1m`)

// CheckDashboardQueries checks, against s, the dashboard's panels whose first query names a
// metric starting with prefix (e.g. "lockscope_"), and its query variables on such metrics:
// s accepts every query (the dashboard's variables standing for every value); every metric
// name with prefix in them is in known (the families an exposition names, MetricNames); and
// each panel shows data (one of its queries answers with a series at least). It returns how
// many queries it checked.
func CheckDashboardQueries(tb testing.TB, s *Server, d Dashboard, prefix string, known map[string]bool) int {
	tb.Helper()
	names := regexp.MustCompile(`\b` + regexp.QuoteMeta(prefix) + `[a-zA-Z0-9_:]*`)
	knownNames := func(where, expr string) {
		for _, name := range names.FindAllString(expr, -1) {
			if !known[name] {
				tb.Errorf("%s: %s is not a metric of the exposition: %s", where, name, expr)
			}
		}
	}
	ctx := context.Background()
	queries := 0
	for _, p := range d.AllPanels() {
		if len(p.Targets) == 0 || !names.MatchString(p.Targets[0].Expr) {
			continue
		}
		shown := false
		for _, target := range p.Targets {
			queries++
			knownNames(p.String(), target.Expr)
			v, err := s.Query(ctx, dashboardVariables.Replace(target.Expr))
			if err != nil {
				tb.Errorf("%s: Prometheus refuses %s: %v", p, target.Expr, err)
			}
			shown = shown || len(v) > 0
		}
		if !shown {
			tb.Errorf("%s: no data", p)
		}
	}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(map[string]any)
		text, _ := q["query"].(string)
		if v.Type != "query" || !names.MatchString(text) {
			continue
		}
		series, ok := strings.CutPrefix(text, "label_values(")
		if i := strings.LastIndexByte(series, ','); ok && i > 0 {
			series = series[:i]
		} else {
			tb.Errorf("variable %s: query %v, want label_values(<series>, <label>)", v.Name, v.Query)
			continue
		}
		queries++
		knownNames("variable "+v.Name, text)
		if got, err := s.Query(ctx, dashboardVariables.Replace(series)); err != nil || len(got) == 0 {
			tb.Errorf("variable %s: %s gives %d series, %v", v.Name, series, len(got), err)
		}
	}
	return queries
}

// MetricNames are the metric families a text exposition names in its # TYPE lines, with a
// histogram's _bucket, _sum and _count series.
func MetricNames(exposition []byte) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(string(exposition), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			if f[3] == "histogram" {
				names[f[2]+"_bucket"], names[f[2]+"_sum"], names[f[2]+"_count"] = true, true, true
			}
		}
	}
	return names
}
