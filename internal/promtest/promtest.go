// Package promtest starts a real Prometheus server for a test, and runs promtool: the one
// owner of "a prometheus process we started" (the exporter's end-to-end test, the checks of
// the alert rules and of the dashboard's queries).
//
// Each server belongs to one test: it listens on a free loopback port, keeps its TSDB in the
// test's temp dir, and is killed when the test ends, pass or fail. When prometheus or promtool
// is not on PATH the test skips, saying how to install them, except when CI=true: CI installs
// them (scripts/deps.sh), so there a missing one fails the test.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redisproc"
	"go.yaml.in/yaml/v3"
)

// Require returns the path of the named binary (prometheus or promtool) or skips the test,
// saying how to install it; with CI=true it fails the test instead.
func Require(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("promtest: %s is not on PATH: run `make test` as root (scripts/deps.sh installs it) or `apt-get install prometheus`", name)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: not skipped)")
	}
	tb.Skip(msg)
	return ""
}

// Config is what the server scrapes and evaluates.
type Config struct {
	// Targets are host:port addresses scraped every ScrapeInterval under job "lockscope"
	// at /metrics.
	Targets []string
	// ScrapeInterval is also the rule evaluation interval; 0 means 1s.
	ScrapeInterval time.Duration
	// RuleFiles are paths of rule files the server loads (copied into its directory).
	RuleFiles []string
}

// Server is one prometheus process owned by a test.
type Server struct {
	tb   testing.TB
	URL  string // http://127.0.0.1:<port>
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	// http's connections are closed with the server: no keep-alive goroutine outlives the
	// test (goleak).
	http *http.Client
}

// Job is the job label of the targets in Config.Targets.
const Job = "lockscope"

// Start starts prometheus with cfg on a free loopback port and waits until it is ready
// (GET /-/ready answers 200).
func Start(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	bin := Require(tb, "prometheus")
	dir := tb.TempDir()
	confPath, err := writeConfig(dir, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var lastErr error
	// The free port may be taken before prometheus binds it: another port then.
	for range 5 {
		port, err := redisproc.FreePort()
		if err != nil {
			tb.Fatal(err)
		}
		s := &Server{tb: tb, dir: dir, URL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			http: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}}
		if lastErr = s.launch(bin, confPath, port); lastErr == nil {
			tb.Cleanup(s.stop)
			return s
		}
	}
	tb.Fatalf("promtest: could not start prometheus: %v", lastErr)
	return nil
}

func writeConfig(dir string, cfg Config) (string, error) {
	interval := cfg.ScrapeInterval
	if interval == 0 {
		interval = time.Second
	}
	var rules []string
	for i, src := range cfg.RuleFiles {
		text, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(dir, fmt.Sprintf("rules-%d.yml", i))
		if err := os.WriteFile(dst, text, 0o644); err != nil {
			return "", err
		}
		rules = append(rules, dst)
	}
	conf := map[string]any{
		"global": map[string]any{
			"scrape_interval":     interval.String(),
			"scrape_timeout":      interval.String(),
			"evaluation_interval": interval.String(),
		},
		"rule_files": rules,
		"scrape_configs": []any{map[string]any{
			"job_name":       Job,
			"static_configs": []any{map[string]any{"targets": cfg.Targets}},
		}},
	}
	text, err := yaml.Marshal(conf)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "prometheus.yml")
	return path, os.WriteFile(path, text, 0o644)
}

func (s *Server) launch(bin, confPath string, port int) error {
	logPath := filepath.Join(s.dir, "prometheus-"+strconv.Itoa(port)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin,
		"--config.file="+confPath,
		"--storage.tsdb.path="+filepath.Join(s.dir, "data-"+strconv.Itoa(port)),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
		"--web.console.templates="+s.dir, // Debian's defaults name dirs that may be missing
		"--web.console.libraries="+s.dir,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// It dies with its starter, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("prometheus on port %d exited at start: %s", port, tail(log))
		default:
		}
		if resp, err := s.http.Get(s.URL + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	log, _ := os.ReadFile(logPath)
	return fmt.Errorf("prometheus on port %d not ready within 30s: %s", port, tail(log))
}

func (s *Server) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
	s.http.CloseIdleConnections()
}

func tail(b []byte) string {
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}

// Sample is one element of an instant vector (a scalar result is one Sample without labels).
type Sample struct {
	Metric map[string]string
	Value  float64
}

// QueryError is an answer of the query API with status "error": the expression was refused.
type QueryError struct {
	Type, Message string
}

func (e *QueryError) Error() string { return e.Type + ": " + e.Message }

// Query evaluates expr now through the HTTP API (GET /api/v1/query). A refused expression is a
// *QueryError; a range-vector result is an error too (ask for an instant vector).
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/query?"+url.Values{"query": {expr}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %s", expr, resp.StatusCode, bytes.TrimSpace(body))
	}
	if answer.Status != "success" {
		return nil, &QueryError{Type: answer.ErrorType, Message: answer.Error}
	}
	switch answer.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(answer.Data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := sampleValue(v.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Metric: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(answer.Data.Result, &v); err != nil {
			return nil, err
		}
		f, err := sampleValue(v)
		return []Sample{{Value: f}}, err
	default:
		return nil, fmt.Errorf("query %q: result type %s, want an instant vector or a scalar", expr, answer.Data.ResultType)
	}
}

// sampleValue is the float of a [time, "value"] pair.
func sampleValue(v [2]any) (float64, error) {
	text, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	return strconv.ParseFloat(text, 64)
}

// WaitFor queries expr every 200ms until cond holds for its samples, and fails the test with
// what and the last answer when it does not within timeout.
func (s *Server) WaitFor(what, expr string, timeout time.Duration, cond func([]Sample) bool) []Sample {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	var last []Sample
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, lastErr = s.Query(ctx, expr)
		cancel()
		if lastErr == nil && cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("promtest: timed out after %v waiting for %s: %s = %v (error %v)", timeout, what, expr, last, lastErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Promtool runs promtool with args (and stdin, when not nil) and returns its combined output;
// a non-zero exit is an error carrying that output.
func Promtool(tb testing.TB, stdin []byte, args ...string) (string, error) {
	tb.Helper()
	bin := Require(tb, "promtool")
	cmd := exec.Command(bin, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), fmt.Errorf("promtool %v: %v\n%s", args, err, out)
	}
	return string(out), err
}
