package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/exporter/exportertest"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// exporterRun is a `lockscope exporter` running in-process.
type exporterRun struct {
	base   string // http://127.0.0.1:port
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuffer
}

// syncBuffer is a buffer the command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startExporter runs `lockscope exporter --listen <free port> args...` until stop (or the
// test's end), and waits until it serves.
func startExporter(t *testing.T, args ...string) *exporterRun {
	t.Helper()
	return startExporterEnv(t, nil, args...)
}

// startExporterEnv is startExporter with env (KEY=VALUE) as the command's whole environment.
func startExporterEnv(t *testing.T, env []string, args ...string) *exporterRun {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &exporterRun{base: fmt.Sprintf("http://127.0.0.1:%d", port), cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	args = append([]string{"exporter", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, args...)
	go func() {
		r.done <- runContext(ctx, args, IOStreams{In: strings.NewReader(""), Out: &syncBuffer{}, ErrOut: r.stderr},
			func(k string) string { return vars[k] })
	}()
	t.Cleanup(func() { r.stop(t) })
	redistest.Eventually(t, "the exporter serves /healthz", func() bool {
		select {
		case code := <-r.done:
			r.done <- code
			t.Fatalf("the exporter exited with %d:\n%s", code, r.stderr)
		default:
		}
		resp, err := http.Get(r.base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return r
}

// stop cancels the exporter (as SIGINT does) and returns its exit code; it fails the test
// when the exporter takes more than 10 s to stop.
func (r *exporterRun) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code // for a second stop (the test's cleanup)
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("the exporter did not stop within 10 s:\n%s", r.stderr)
		return -1
	}
}

// waitMetrics waits until a scrape has every listed series at its value (NaN: absent).
func (r *exporterRun) waitMetrics(t *testing.T, what string, series map[string]float64) exportertest.Samples {
	t.Helper()
	var last exportertest.Samples
	deadline := time.Now().Add(15 * time.Second)
	for {
		last = exportertest.Scrape(t, r.base)
		var off []string
		for s, v := range series {
			got, ok := last[s]
			if v != v && ok || v == v && (!ok || got != v) {
				off = append(off, fmt.Sprintf("%s = %v (present %v), want %v", s, got, ok, v))
			}
		}
		if len(off) == 0 {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after 15 s:\n%s\nstderr:\n%s", what, strings.Join(off, "\n"), r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealth waits until /healthz answers code with a body that starts with reason.
func (r *exporterRun) waitHealth(t *testing.T, code int, reason string) {
	t.Helper()
	var gotCode int
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		gotCode, body = exportertest.Get(t, r.base+"/healthz")
		if gotCode == code && strings.HasPrefix(body, reason) && strings.Count(body, "\n") == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz: %d %q after 20 s, want %d %q...\nstderr:\n%s", gotCode, body, code, reason, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var noSeries = func() float64 { var z float64; return z / z }()

// locklibValue is a locklib lock value taken at acquired.
func locklibValue(acquired time.Time) string {
	return fmt.Sprintf("api-7:req-1:%d:0123456789abcdef", acquired.UnixMilli())
}

// seedFormats writes locks of several formats: a locklib lock held for 10 minutes with two
// waiters, a plain string without TTL, a Redisson hash, and a lock in another group.
func seedFormats(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"set", "lock:orders:1", locklibValue(time.Now().Add(-10 * time.Minute)), "px", 60000},
		{"zadd", "waitq:{lock:orders:1}", 1, "w1", 2, "w2"},
		{"set", "lock:orders:2", "plain-token"},
		{"hset", "lock:users:9", "8d2f4c6e-1a3b-4c5d-9e7f-0a1b2c3d4e5f:42", 1},
		{"pexpire", "lock:users:9", 30000},
		{"set", "lock:pay:7", locklibValue(time.Now()), "px", 5000},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
}

// TestExporterStandalone: every format is counted in its group, deletions and new locks reach
// the metrics without a scrape asking Redis, and the exporter stops cleanly, leaving no
// goroutine behind.
func TestExporterStandalone(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	seedFormats(t, c)
	ignore := goleak.IgnoreCurrent()

	r := startExporter(t, "--redis", redisURL(srv.Addr))
	r.waitHealth(t, http.StatusOK, "ok")
	got := r.waitMetrics(t, "the seeded census", map[string]float64{
		`lockscope_locks{group="orders",format="lockscope"}`:               1,
		`lockscope_locks{group="orders",format="opaque"}`:                  1,
		`lockscope_locks{group="users",format="redisson"}`:                 1,
		`lockscope_locks{group="pay",format="lockscope"}`:                  1,
		`lockscope_locks_no_expiry{group="orders"}`:                        1,
		`lockscope_locks_stuck{group="orders"}`:                            1,
		`lockscope_locks_stuck{group="pay"}`:                               0,
		`lockscope_lock_waiters{group="orders"}`:                           2,
		`lockscope_lock_ttl_seconds_count{group="orders"}`:                 1,
		`lockscope_lock_ttl_seconds_bucket{group="pay",le="5"}`:            1,
		`lockscope_lock_ttl_seconds_bucket{group="users",le="15"}`:         0,
		`lockscope_lock_ttl_seconds_bucket{group="users",le="30"}`:         1,
		`lockscope_server_up{server="` + srv.Addr + `",role="standalone"}`: 1,
		`lockscope_census_partial`:                                         0,
		`lockscope_census_errors_total{server="` + srv.Addr + `"}`:         0,
	})
	if age := got[`lockscope_lock_oldest_age_seconds{group="orders"}`]; age < 599 || age > 700 {
		t.Errorf("oldest age of orders %v, want about 600 s", age)
	}
	if got[`lockscope_census_passes_total`] < 1 || got[`lockscope_census_last_success_timestamp_seconds`] < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("no recent complete pass: %v passes, last at %v", got[`lockscope_census_passes_total`], got[`lockscope_census_last_success_timestamp_seconds`])
	}

	// Deleted locks leave the metrics, a new one enters, between passes.
	if err := c.Del(context.Background(), "lock:orders:1", "lock:users:9").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(context.Background(), "lock:billing:3", locklibValue(time.Now()), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r.waitMetrics(t, "deletions and a new lock", map[string]float64{
		`lockscope_locks{group="orders",format="lockscope"}`:  noSeries,
		`lockscope_locks{group="users",format="redisson"}`:    noSeries,
		`lockscope_lock_waiters{group="users"}`:               noSeries,
		`lockscope_locks_stuck{group="orders"}`:               0,
		`lockscope_lock_waiters{group="orders"}`:              0,
		`lockscope_locks{group="billing",format="lockscope"}`: 1,
	})

	if code := r.stop(t); code != exitOK {
		t.Fatalf("exit %d after cancel, want 0:\n%s", code, r.stderr)
	}
	if !strings.Contains(r.stderr.String(), "serving http://") {
		t.Errorf("no serving line on stderr:\n%s", r.stderr)
	}
	goleak.VerifyNone(t, ignore)
}

// TestExporterServerRestart: a killed server shows as down, counts errors and fails /healthz;
// once it is back /healthz recovers, without restarting the exporter.
func TestExporterServerRestart(t *testing.T) {
	srv := redistest.Start(t)
	seedFormats(t, srv.Client())
	r := startExporter(t, "--redis", redisURL(srv.Addr))
	r.waitHealth(t, http.StatusOK, "ok")
	up := `lockscope_server_up{server="` + srv.Addr + `",role="standalone"}`
	errs := `lockscope_census_errors_total{server="` + srv.Addr + `"}`

	srv.Kill()
	r.waitMetrics(t, "the server down", map[string]float64{up: 0})
	r.waitHealth(t, http.StatusServiceUnavailable, "") // the server silent, or the pass failed
	if _, body := exportertest.Get(t, r.base+"/healthz"); !strings.Contains(body, srv.Addr) {
		t.Errorf("/healthz does not name the server down: %q", body)
	}
	redistest.Eventually(t, "errors counted", func() bool { return exportertest.Scrape(t, r.base)[errs] > 0 })

	srv.Restart()
	r.waitHealth(t, http.StatusOK, "ok")
	// The restarted server is empty: its locks are gone from the census.
	r.waitMetrics(t, "the server back, empty", map[string]float64{
		up: 1,
		`lockscope_locks{group="orders",format="lockscope"}`: noSeries,
	})
}

func TestExporterRedlock(t *testing.T) {
	servers, clients, flags := redlockFlags(t, 3)
	value := locklibValue(time.Now()) // one holder's value on every instance
	for _, c := range clients {
		if err := c.Set(context.Background(), "lock:q:1", value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A lock on one instance of three: not validly held.
	if err := clients[0].Set(context.Background(), "lock:q:2", locklibValue(time.Now()), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := startExporter(t, flags...)
	series := func(addr string) string { return `lockscope_server_up{server="` + addr + `",role="redlock"}` }
	r.waitMetrics(t, "every instance up", map[string]float64{
		`lockscope_redlock_quorum`:                                         1,
		`lockscope_locks{group="q",format="lockscope"}`:                    2, // lock:q:1 once, though on three instances
		`lockscope_redlock_locks_without_quorum{group="q"}`:                1,
		series(servers[0].Addr):                                            1,
		series(servers[1].Addr):                                            1,
		series(servers[2].Addr):                                            1,
		`lockscope_exporter_info{version="(devel)",target_kind="redlock"}`: 1,
	})
	servers[0].Kill()
	r.waitMetrics(t, "one instance down", map[string]float64{`lockscope_redlock_quorum`: 1, series(servers[0].Addr): 0})
	servers[1].Kill()
	r.waitMetrics(t, "two instances down", map[string]float64{`lockscope_redlock_quorum`: 0, series(servers[1].Addr): 0})
}

func TestExporterCluster(t *testing.T) {
	redistest.Slow(t)
	cl := redistest.StartCluster(t, 3)
	c := cl.Client()
	for i := range 30 {
		if err := c.Set(context.Background(), fmt.Sprintf("lock:g%d:%d", i%3, i), locklibValue(time.Now()), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r := startExporter(t, "--cluster", "--redis", redisURL(cl.Addrs[0]))
	want := map[string]float64{
		`lockscope_locks{group="g0",format="lockscope"}`: 10,
		`lockscope_locks{group="g1",format="lockscope"}`: 10,
		`lockscope_locks{group="g2",format="lockscope"}`: 10,
		`lockscope_redlock_quorum`:                       noSeries,
	}
	for _, addr := range cl.Addrs[:3] {
		want[`lockscope_server_up{server="`+addr+`",role="master"}`] = 1
	}
	r.waitMetrics(t, "every master up, every lock counted", want)
	r.waitHealth(t, http.StatusOK, "ok")
}

// TestExporterReadOnly: the exporter works as the documented read-only user (docs/acl.md's
// inspector) and sends no command that writes: every command the server ran for it is
// flagged read-only or admin-free by COMMAND INFO, and none was refused.
func TestExporterReadOnly(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	seedFormats(t, admin)
	applyACLRules(t, []*redistest.Server{srv}, false)
	ctx := context.Background()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r := startExporter(t, "--redis", roleURL("lockscope-inspector", srv.Addr))
	r.waitHealth(t, http.StatusOK, "ok")
	r.waitMetrics(t, "the census as the inspector", map[string]float64{
		`lockscope_locks{group="orders",format="lockscope"}`: 1,
		`lockscope_locks{group="users",format="redisson"}`:   1,
		`lockscope_lock_waiters{group="orders"}`:             2,
	})
	time.Sleep(1500 * time.Millisecond) // a heartbeat and the re-reads of a second
	r.stop(t)

	info, err := admin.Info(ctx, "commandstats", "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "errorstat_NOPERM") {
		t.Errorf("a command was refused to the inspector:\n%s", info)
	}
	for name := range redistest.CommandStats(info) {
		if name == "config|resetstat" {
			continue // the test's own
		}
		doc, err := admin.Do(ctx, "command", "info", name).Slice()
		if err != nil || len(doc) != 1 {
			t.Fatalf("COMMAND INFO %s: %v %v", name, doc, err)
		}
		// [name arity [flags...] first last step [categories...] ...]: the flags.
		if info, ok := doc[0].([]any); !ok || len(info) < 3 || strings.Contains(fmt.Sprint(info[2]), "write") {
			t.Errorf("the exporter ran %s, a write command", name)
		}
	}
}

func TestExporterExitCodes(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", "right"))
	dead, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	good := "redis://:right@" + srv.Addr
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--group", "glob:*"}, exitUsage, "--group"},
		{[]string{"--group", "regex:("}, exitUsage, "--group"},
		{[]string{"--max-groups", "0"}, exitUsage, "--max-groups"},
		{[]string{"--listen", "nowhere"}, exitUsage, "--listen"},
		{[]string{"--census-max-age", "0s"}, exitUsage, "--census-max-age"},
		{[]string{"--stuck-after", "0s"}, exitUsage, "--stuck-after"},
		{[]string{"extra"}, exitUsage, "unknown command"},
	} {
		r := runCLI(t, cliOpts{}, append([]string{"exporter", "--redis", good}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("exporter %v: exit %d, want %d saying %q:\n%s", tc.args, r.code, tc.code, tc.says, r)
		}
	}
	r := runCLI(t, cliOpts{}, "exporter", "--redis", fmt.Sprintf("redis://127.0.0.1:%d", dead))
	expectExit(t, r, exitUnreachable)
	r = runCLI(t, cliOpts{}, "exporter", "--redis", "redis://:wrong@"+srv.Addr)
	expectExit(t, r, exitAuth)
	if strings.Contains(r.stderr, "wrong") {
		t.Errorf("the password is in the error:\n%s", r)
	}
}

// TestExporterSIGTERM: the process stops on SIGTERM with exit code 0.
func TestExporterSIGTERM(t *testing.T) {
	srv := redistest.Start(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cliBinary(t), "exporter", "--redis", redisURL(srv.Addr), "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Env = cleanEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	redistest.Eventually(t, "the exporter healthy", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit 10 s after SIGTERM:\n%s", stderr.String())
	}
}

// TestExporterSentinel: through Sentinel the server is the master of the moment: after a
// failover the promoted replica is up and the old master has left the metrics and /healthz.
func TestExporterSentinel(t *testing.T) {
	redistest.Slow(t)
	rs := redistest.StartReplicated(t, 1, 1)
	old, err := rs.Master()
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Client().Set(context.Background(), "lock:s:1", locklibValue(time.Now()), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// The replica must have the lock before it is promoted: without this wait it sometimes had
	// not (under -race, 2 runs in 6), the promoted master had no lock:s:1, and the exporter
	// rightly showed none.
	if n, err := old.Client().Do(context.Background(), "WAIT", 1, 10_000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}
	r := startExporter(t, "--redis", redisURL(rs.SentinelAddrs[0]), "--sentinel-master", redistest.MasterName)
	up := func(addr string) string { return `lockscope_server_up{server="` + addr + `",role="master"}` }
	r.waitMetrics(t, "the master up", map[string]float64{
		up(old.Addr): 1,
		`lockscope_locks{group="s",format="lockscope"}`:                     1,
		`lockscope_exporter_info{version="(devel)",target_kind="sentinel"}`: 1,
	})
	promoted, err := rs.Failover(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r.waitMetrics(t, "the promoted replica up, the old master gone", map[string]float64{
		up(promoted.Addr): 1,
		up(old.Addr):      noSeries,
		`lockscope_locks{group="s",format="lockscope"}`: 1,
	})
	r.waitHealth(t, http.StatusOK, "ok")
}

// TestExporterCardinalityBounded: 100,000 locks on a real server, each in a would-be group of
// its own, make at most --max-groups group labels plus _other.
func TestExporterCardinalityBounded(t *testing.T) {
	const n, maxGroups = 100_000, 100
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := context.Background()
	for start := 0; start < n; start += 5000 {
		pipe := c.Pipeline()
		for i := start; i < start+5000; i++ {
			pipe.Set(ctx, fmt.Sprintf("lock:g%06d:1", i), "token", time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r := startExporter(t, "--redis", redisURL(srv.Addr), "--max-groups", fmt.Sprint(maxGroups))
	got := r.waitMetrics(t, "every lock counted", map[string]float64{
		`lockscope_exporter_groups_folded`:                n - maxGroups,
		`lockscope_locks{group="_other",format="opaque"}`: n - maxGroups,
	})
	if groups := got.Groups(); len(groups) != maxGroups+1 {
		t.Errorf("%d distinct group labels, want %d", len(groups), maxGroups+1)
	}
	// Per group: locks (one format here), no_expiry, stuck, oldest age, waiters, 9 buckets,
	// sum, count.
	if limit := (maxGroups+1)*16 + 20; len(got) > limit {
		t.Errorf("%d series, want at most %d", len(got), limit)
	}
}

// TestExporterRefusedTheCensus: a user that may not SCAN gets exit code 8 and one line naming
// the command, at once, not a running exporter whose /healthz fails forever.
func TestExporterRefusedTheCensus(t *testing.T) {
	srv := redistest.Start(t)
	seedFormats(t, srv.Client())
	srv.SetUser("noscan", "on", ">pw", "+@all", "-scan", "~*", "&*")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan cliRun, 1)
	go func() {
		done <- runCLI(t, cliOpts{}, "exporter", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--redis", "redis://noscan:pw@"+srv.Addr)
	}()
	select {
	case r := <-done:
		expectExit(t, r, exitPermission)
		if !strings.Contains(r.stderr, "SCAN") || strings.Contains(r.stderr, "pw@") {
			t.Errorf("want one line naming SCAN, no password:\n%s", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the exporter still runs 20 s after its census was refused")
	}
}

// TestExporterContext: --context gives the exporter its servers, pattern and password as it
// does every command.
func TestExporterContext(t *testing.T) {
	const secret = "ctx-pw"
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", secret))
	c := srv.Client(func(o *redis.Options) { o.Password = secret })
	for _, key := range []string{"lock:ctx:a", "other:ctx:b"} {
		if err := c.Set(context.Background(), key, "token", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	xdg := writeConfig(t, "contexts:\n  prod:\n    redis: [redis://"+srv.Addr+"]\n    pattern: \"other:*\"\n    password_env: PROD_PW\n")
	r := startExporterEnv(t, []string{xdg, "PROD_PW=" + secret}, "--context", "prod")
	r.waitMetrics(t, "the context's pattern", map[string]float64{
		`lockscope_locks{group="ctx",format="opaque"}`: 1, // other:ctx:b, not lock:ctx:a
	})
	if strings.Contains(r.stderr.String(), secret) {
		t.Errorf("the password is on stderr:\n%s", r.stderr)
	}
}
