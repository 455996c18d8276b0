package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/promtest"
	"github.com/lockscope/lockscope/internal/redistest"
	"go.yaml.in/yaml/v3"
)

// exporterProcess is a `lockscope exporter` of the built binary, serving on a free loopback
// port, killed when the test ends.
type exporterProcess struct {
	cmd    *exec.Cmd
	addr   string // 127.0.0.1:<port> of /metrics and /healthz
	exited chan struct{}
	stderr *syncBuffer
}

// startExporterProcess runs bin exporter with args and --listen on a free port, and waits until it
// serves /metrics.
func startExporterProcess(tb testing.TB, bin string, args ...string) *exporterProcess {
	tb.Helper()
	port, err := redistest.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	p := &exporterProcess{addr: "127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{}), stderr: &syncBuffer{}}
	p.cmd = exec.Command(bin, append([]string{"exporter", "--listen", p.addr}, args...)...)
	p.cmd.Env = cleanEnv()
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	tb.Cleanup(p.kill)
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-p.exited:
			tb.Fatalf("lockscope exporter exited at start: %s\n%s", p.cmd.ProcessState, p.stderr)
		default:
		}
		if _, err := p.get("/metrics"); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			tb.Fatalf("lockscope exporter: no /metrics on %s within 20s\n%s", p.addr, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process (SIGKILL) and waits for it.
func (p *exporterProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// get returns the body of a 200 answer to GET path.
func (p *exporterProcess) get(path string) ([]byte, error) {
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, err
}

// alertRulesFor is a copy of the alert rules example in dir, with the `for` of the named
// alerts set to 0s: the test sees them fire without waiting out minutes.
func alertRulesFor(tb testing.TB, dir string, immediate ...string) string {
	tb.Helper()
	text, err := os.ReadFile(filepath.Join("..", "docs", "prometheus", "lockscope-alerts.yml"))
	if err != nil {
		tb.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string           `yaml:"name"`
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(text, &rules); err != nil {
		tb.Fatal(err)
	}
	changed := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if slices.Contains(immediate, fmt.Sprint(r["alert"])) {
				r["for"] = "0s"
				changed++
			}
		}
	}
	if changed != len(immediate) {
		tb.Fatalf("alert rules: found %d of %v", changed, immediate)
	}
	out, err := yaml.Marshal(rules)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "lockscope-alerts.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestExporterUnderPrometheus is the end-to-end test of the exporter's metrics: a real
// redis-server holding locks of eight groups in five formats (redistest.Mixed) and a Redlock
// set of three (one lock on one instance only), each followed by the built `lockscope
// exporter`, and a real Prometheus scraping both every second with the alert rules example
// loaded. It queries Prometheus' HTTP API for what the exporters must report, sees
// LockWithoutExpiry fire and, once two Redlock instances are killed, RedlockQuorumLost; it
// lints the expositions with promtool and checks every query of the Grafana dashboard on the
// exporter's metrics against this Prometheus.
func TestExporterUnderPrometheus(t *testing.T) {
	redistest.Slow(t)
	bin := cliBinary(t)
	promtest.Require(t, "prometheus")
	srv := redistest.Start(t)
	const n = 800
	now := time.Now()
	tally := redistest.LoadMixedLocks(t, srv.Client(), n, now)
	exp := startExporterProcess(t, bin, "--redis", redisURL(srv.Addr), "--stuck-after", "1h")
	instances := redistest.StartN(t, 3)
	// One lock on one instance of three: a Redlock acquisition that failed half-way.
	if err := instances[0].Client().Set(context.Background(), "lock:orders:half", redistest.Mixed(0, now).Value, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	redlockArgs := []string{"--redlock"}
	for _, s := range instances {
		redlockArgs = append(redlockArgs, "--redis", redisURL(s.Addr))
	}
	redlock := startExporterProcess(t, bin, redlockArgs...)
	prom := promtest.Start(t, promtest.Config{Targets: []string{exp.addr, redlock.addr},
		RuleFiles: []string{alertRulesFor(t, t.TempDir(), "LockWithoutExpiry", "RedlockQuorumLost")}})

	for _, e := range []*exporterProcess{exp, redlock} {
		prom.WaitFor("a scrape after the first complete census", fmt.Sprintf(`lockscope_census_passes_total{instance=%q}`, e.addr), 30*time.Second,
			func(v []promtest.Sample) bool { return len(v) == 1 && v[0].Value >= 1 })
	}
	ctx := context.Background()
	query := func(expr string) map[string]float64 {
		t.Helper()
		v, err := prom.Query(ctx, expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		out := map[string]float64{}
		for _, s := range v {
			var labels []string
			for _, l := range []string{"group", "format", "server", "role"} {
				if s.Metric[l] != "" {
					labels = append(labels, s.Metric[l])
				}
			}
			out[strings.Join(labels, "/")] = s.Value
		}
		return out
	}
	expect := func(expr string, want map[string]float64) {
		t.Helper()
		got := query(expr)
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s{%s} = %v, want %v", expr, k, got[k], w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok && g != 0 {
				t.Errorf("%s{%s} = %v, want none", expr, k, g)
			}
		}
	}

	wantLocks, wantByFormat := map[string]float64{}, map[string]float64{}
	wantNoExpiry, wantStuck, wantWaiters := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for group, byFormat := range tally.Locks {
		for format, k := range byFormat {
			wantLocks[group] += float64(k)
			wantByFormat[group+"/"+format] = float64(k)
		}
		wantNoExpiry[group] = float64(tally.NoExpiry[group])
		wantStuck[group] = float64(tally.Stuck[group])
		wantWaiters[group] = float64(tally.Waiters[group])
	}
	on := fmt.Sprintf(`{instance=%q}`, exp.addr)
	expect(`sum by (group) (lockscope_locks`+on+`)`, wantLocks)
	expect(`sum by (group, format) (lockscope_locks`+on+`)`, wantByFormat)
	expect(`sum by (group) (lockscope_locks_no_expiry`+on+`)`, wantNoExpiry)
	expect(`sum by (group) (lockscope_locks_stuck`+on+`)`, wantStuck)
	expect(`sum by (group) (lockscope_lock_waiters`+on+`)`, wantWaiters)
	expect(`sum(lockscope_lock_ttl_seconds_count`+on+`)`, map[string]float64{"": float64(tally.WithTTL)})
	// Every TTL of the mix is 5 to 120 minutes: none in the buckets up to 60 s.
	expect(`sum(lockscope_lock_ttl_seconds_bucket{le="60",`+on[1:]+`)`, map[string]float64{"": 0})
	expect(`lockscope_server_up`+on, map[string]float64{srv.Addr + "/standalone": 1})
	expect(`lockscope_census_partial`+on, map[string]float64{"": 0})
	ages := query(`lockscope_lock_oldest_age_seconds` + on)
	for group, oldest := range tally.Oldest {
		if want := time.Since(oldest).Seconds(); ages[group] < want-30 || ages[group] > want+1 {
			t.Errorf("oldest lock age of %s: %vs, want %.0fs", group, ages[group], want)
		}
	}
	last := query(`lockscope_census_last_success_timestamp_seconds` + on)[""]
	if at := time.Unix(int64(last), 0); at.Before(now.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("census last success %v, want between the load (%v) and now", at, now)
	}

	// The alert with its `for` cut to 0s fires for every group that has a lock without expiry.
	firing := prom.WaitFor("LockWithoutExpiry firing", `ALERTS{alertname="LockWithoutExpiry", alertstate="firing"}`, 15*time.Second,
		func(v []promtest.Sample) bool { return len(v) == len(wantNoExpiry) })
	for _, a := range firing {
		if wantNoExpiry[a.Metric["group"]] == 0 || a.Metric["severity"] != "warning" {
			t.Errorf("LockWithoutExpiry fired for %v", a.Metric)
		}
	}

	body, err := exp.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	redlockBody, err := redlock.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{body, redlockBody} {
		if out, err := promtest.Promtool(t, b, "check", "metrics"); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("promtool check metrics on the exporter's /metrics: %v\n%s", err, out)
		}
	}
	// The dashboard: its panels on the exporter's metrics (the library's are checked by
	// locklib/extra/lockprom's TestUnderPrometheus).
	names := promtest.MetricNames(body)
	for name := range promtest.MetricNames(redlockBody) {
		names[name] = true
	}
	dashboard := promtest.ReadDashboard(t, filepath.Join("..", "docs", "grafana", "lockscope.json"))
	if checked := promtest.CheckDashboardQueries(t, prom, dashboard, "lockscope_", names); checked < 15 {
		t.Errorf("dashboard: %d queries on the exporter's metrics, want the 15 and more it has", checked)
	}

	// Two of the three Redlock instances die: the quorum is lost, and the alert says so.
	on = fmt.Sprintf(`{instance=%q}`, redlock.addr)
	expect(`lockscope_redlock_quorum`+on, map[string]float64{"": 1})
	expect(`lockscope_redlock_locks_without_quorum`+on, map[string]float64{"orders": 1})
	instances[0].Kill()
	instances[1].Kill()
	prom.WaitFor("RedlockQuorumLost firing", fmt.Sprintf(`ALERTS{alertname="RedlockQuorumLost", alertstate="firing", instance=%q}`, redlock.addr),
		20*time.Second, func(v []promtest.Sample) bool { return len(v) == 1 })
	expect(`lockscope_server_up`+on, map[string]float64{
		instances[0].Addr + "/redlock": 0, instances[1].Addr + "/redlock": 0, instances[2].Addr + "/redlock": 1})
}
