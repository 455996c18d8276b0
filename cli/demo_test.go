package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// The headless demo on its embedded server: JSON with the documented top-level fields, exit 0.
// $REDIS_URL points at nothing: the demo must not use it.
func TestDemoHeadlessJSON(t *testing.T) {
	t.Parallel()
	r := runCLI(t, cliOpts{env: []string{envRedisURL + "=redis://127.0.0.1:1"}},
		"demo", "--headless", "--duration", "3s", "--ttl", "1s", "--json")
	expectExit(t, r, 0)
	objs := jsonLines(t, compactJSON(t, r.stdout))
	if len(objs) != 1 {
		t.Fatalf("%d JSON objects, want 1\n%s", len(objs), r)
	}
	s := objs[0]
	for _, field := range []string{"sections", "overlaps", "stale_rejected", "expired_after_crash", "wait_p50_ms", "wait_p99_ms"} {
		if _, ok := s[field].(float64); !ok {
			t.Errorf("field %s: %#v, want a number", field, s[field])
		}
	}
	if s["sections"].(float64) < 1 || s["overlaps"].(float64) != 0 {
		t.Errorf("sections %v overlaps %v", s["sections"], s["overlaps"])
	}
	if server, _ := s["server"].(string); !strings.Contains(server, "embedded miniredis 127.0.0.1:") {
		t.Errorf("server %q, want the embedded one", server)
	}
	if phases, _ := s["scenarios"].([]any); len(phases) < 4 {
		t.Errorf("mixed run with %d scenarios, want healthy, slow, crash and pause", len(phases))
	}
}

// The rw-pool scenario headless: its counters in the JSON, the pool's size, exit 0.
func TestDemoRWPoolJSON(t *testing.T) {
	t.Parallel()
	r := runCLI(t, cliOpts{}, "demo", "--scenario", "rw-pool", "--headless", "--duration", "3s", "--ttl", "1s", "--json", "--permits", "2")
	expectExit(t, r, 0)
	s := jsonLines(t, compactJSON(t, r.stdout))[0]
	for _, field := range []string{"lease_violations", "leases_lost", "max_readers", "max_permits", "overlaps", "stale_accepted"} {
		if v, ok := s[field].(float64); !ok || (field != "leases_lost" && field != "max_readers" && field != "max_permits" && v != 0) {
			t.Errorf("field %s: %#v, want a number (0 for an unsafe figure)", field, s[field])
		}
	}
	if s["scenario"] != "rw-pool" || s["permits"] != 2.0 || s["resources"] != 2.0 || s["sections"].(float64) < 1 || s["unsafe"] != false {
		t.Errorf("summary %v", s)
	}
	if p, _ := s["max_permits"].(float64); p > 2 {
		t.Errorf("max_permits %v above the 2 permits", p)
	}
}

// With --redis the demo runs on those servers: each worker dials clients of its own with the
// options of the connection (connect.Target.Dialer).
func TestDemoHeadlessOnRedis(t *testing.T) {
	s := redistest.Start(t)
	r := runCLI(t, cliOpts{}, "demo", "--headless", "--duration", "2s", "--ttl", "1s", "--json", "--redis", redisURL(s.Addr))
	expectExit(t, r, 0)
	sum := jsonLines(t, compactJSON(t, r.stdout))[0]
	if sum["server"] != "standalone "+s.Addr || sum["sections"].(float64) < 1 || sum["overlaps"].(float64) != 0 {
		t.Errorf("summary %v", sum)
	}
	// It ends by removing every key it created there: locks and their companions, the locks
	// of crashed workers too.
	if left := s.Client().Keys(context.Background(), "*lock:demo:*").Val(); len(left) != 0 {
		t.Errorf("the demo left %v on the server", left)
	}
	r = runCLI(t, cliOpts{}, "demo", "--headless", "--duration", "1500ms", "--ttl", "1s", "--scenario", "crash", "--redis", redisURL(s.Addr))
	expectExit(t, r, 0)
	if left := s.Client().Keys(context.Background(), "*lock:demo:*").Val(); len(left) != 0 {
		t.Errorf("the crash scenario left %v on the server", left)
	}
}

// --lock naive on a real redis-server: the checker finds the overlaps of a lock without a fence
// (the expected result: exit 0, not 10), and the run removes its lock:naive:* keys, the one a
// crash left without a TTL too.
func TestDemoNaiveOnRedis(t *testing.T) {
	s := redistest.Start(t)
	r := runCLI(t, cliOpts{}, "demo", "--headless", "--duration", "4s", "--ttl", "1s", "--json", "--scenario", "pause",
		"--lock", "naive", "--redis", redisURL(s.Addr))
	expectExit(t, r, 0)
	sum := jsonLines(t, compactJSON(t, r.stdout))[0]
	if sum["lock"] != "naive" || sum["protection"] != "none" || sum["unsafe"] != true ||
		sum["overlaps"].(float64) < 1 || sum["stale_accepted"].(float64) < 1 {
		t.Errorf("naive pause run: %v, want overlaps and stale writes accepted", sum)
	}
	r = runCLI(t, cliOpts{}, "demo", "--headless", "--duration", "3s", "--ttl", "500ms", "--json", "--scenario", "crash",
		"--lock", "naive", "--redis", redisURL(s.Addr))
	expectExit(t, r, 0)
	if sum := jsonLines(t, compactJSON(t, r.stdout))[0]; sum["no_ttl_locks"].(float64) < 1 {
		t.Errorf("naive crash run: %v, want a lock left without a TTL", sum)
	}
	if left := s.Client().Keys(context.Background(), "lock:*").Val(); len(left) != 0 {
		t.Errorf("the naive runs left %v on the server", left)
	}
}

// --compare runs both locks at once: {"locklib": {...}, "naive": {...}}; the naive run's
// overlaps and accepted stale writes are its expected result (exit 0), locklib's are zero.
func TestDemoCompareJSON(t *testing.T) {
	t.Parallel()
	r := runCLI(t, cliOpts{env: []string{envRedisURL + "=redis://127.0.0.1:1"}},
		"demo", "--headless", "--compare", "--scenario", "pause", "--duration", "4s", "--ttl", "1s", "--json")
	expectExit(t, r, 0)
	objs := jsonLines(t, compactJSON(t, r.stdout))
	if len(objs) != 1 {
		t.Fatalf("%d JSON objects, want 1\n%s", len(objs), r)
	}
	lib, _ := objs[0]["locklib"].(map[string]any)
	naive, _ := objs[0]["naive"].(map[string]any)
	if lib == nil || naive == nil || len(objs[0]) != 2 {
		t.Fatalf("want exactly the keys locklib and naive:\n%s", r.stdout)
	}
	if lib["lock"] != "locklib" || lib["overlaps"] != 0.0 || lib["stale_accepted"] != 0.0 || lib["unsafe"] != false || lib["sections"].(float64) < 1 {
		t.Errorf("locklib run: %v", lib)
	}
	if naive["lock"] != "naive" || naive["overlaps"].(float64) < 1 || naive["stale_accepted"].(float64) < 1 || naive["unsafe"] != true {
		t.Errorf("naive run: %v, want overlaps and stale writes accepted", naive)
	}
	if lib["scenario"] != "pause" || naive["scenario"] != "pause" || lib["server"] != naive["server"] {
		t.Errorf("the runs differ in scenario or server: %v / %v, %v / %v", lib["scenario"], naive["scenario"], lib["server"], naive["server"])
	}
	// The text form: both tables and verdicts, then the comparison.
	r = runCLI(t, cliOpts{}, "demo", "--headless", "--compare", "--scenario", "healthy", "--duration", "1s", "--ttl", "1s")
	expectExit(t, r, 0)
	for _, want := range []string{"lock: locklib, protection: fencing-tokens", "lock: naive, protection: none", "compare:          locklib    naive"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text summary lacks %q:\n%s", want, r.stdout)
		}
	}
}

// compactJSON turns the indented summary into one line, for jsonLines.
func compactJSON(t *testing.T, out string) string {
	t.Helper()
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "\n", " ")), " ")
}

func TestDemoRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"demo", "--headless", "--scenario", "failover"}, // single instance: no quorum to keep
		{"demo", "--headless", "--scenario", "nosuch"},
		{"demo", "--json"},
		{"demo", "--headless", "--workers", "0"},
		{"demo", "--headless", "--lock", "nosuch"},
		{"demo", "--headless", "--lock", "naive", "--redlock", "3"},
		{"demo", "--headless", "--compare", "--redlock", "3"},
		{"demo", "--headless", "--compare", "--lock", "naive"},
		{"demo", "--headless", "--compare", "--scenario", "failover-replica"},
		{"demo", "--headless", "--compare", "--scenario", "rw-pool"},
		{"demo", "--headless", "--lock", "naive", "--scenario", "rw-pool"},
		{"demo", "--headless", "--redlock", "3", "--scenario", "rw-pool"},
		{"demo", "--headless", "--scenario", "rw-pool", "--permits", "0"},
	} {
		r := runCLI(t, cliOpts{}, args...)
		expectExit(t, r, exitUsage)
		if r.stderr == "" || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v: stderr %q, want one clear line", args, r.stderr)
		}
	}
}

// `lockscope demo` in a real terminal (tmux): the console opens on the embedded server within
// seconds with workers fighting over lock:demo:* (holders change), and the demo pane's worker
// rows change state; x crashes the selected worker.
func TestDemoTUIInTmux(t *testing.T) {
	redistest.Slow(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not on PATH (apt-get install tmux)")
	}
	bin := cliBinary(t)
	sock := fmt.Sprintf("lockscope-demo-test-%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	// The tmux server's environment, not ours, reaches the command: set it explicitly.
	command := fmt.Sprintf("env -u %s -u %s TERM=xterm-256color %s demo --ttl 1s; echo EXITED $?; sleep 30", envRedisURL, envPassword, bin)
	if out, err := tmux("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", command); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	capture := func() string {
		out, _ := tmux("capture-pane", "-p", "-t", "demo")
		return out
	}

	holderRow := regexp.MustCompile(`(lock:demo:\w+)\s+(demo-w\d+)`)
	holders := map[string]map[string]bool{}
	fighting := func(screen string) bool {
		for _, m := range holderRow.FindAllStringSubmatch(screen, -1) {
			if holders[m[1]] == nil {
				holders[m[1]] = map[string]bool{}
			}
			holders[m[1]][m[2]] = true
			if len(holders[m[1]]) >= 2 {
				return true
			}
		}
		return false
	}
	screen := waitScreen(t, capture, 20*time.Second, fighting)
	if !fighting(screen) {
		t.Fatalf("no lock:demo:* key changed holder within 20s; holders seen %v; screen:\n%s", holders, screen)
	}

	if screen := capture(); !strings.Contains(screen, "WORKER") {
		t.Fatalf("no demo pane (ui.Options.Demo) on the console:\n%s", screen)
	}
	workerRow := regexp.MustCompile(`(demo-w\d+)\s+(waiting|holding|working|paused|crashed)\s`)
	states := map[string]map[string]bool{}
	changed := func(screen string) bool {
		for _, m := range workerRow.FindAllStringSubmatch(screen, -1) {
			if states[m[1]] == nil {
				states[m[1]] = map[string]bool{}
			}
			states[m[1]][m[2]] = true
			if len(states[m[1]]) >= 2 {
				return true
			}
		}
		return false
	}
	if screen := waitScreen(t, capture, 10*time.Second, changed); !changed(screen) {
		t.Fatalf("no worker row changed state within 10s: %v\n%s", states, screen)
	}
	if out, err := tmux("send-keys", "-t", "demo", "x"); err != nil { // crash the selected worker (demo-w1)
		t.Fatalf("send-keys: %v %s", err, out)
	}
	crashed := regexp.MustCompile(`demo-w1\s+crashed`)
	if screen := waitScreen(t, capture, 5*time.Second, crashed.MatchString); !crashed.MatchString(screen) {
		t.Fatalf("demo-w1 not shown crashed after x:\n%s", screen)
	}
	// + adds a worker: confirmed, selected, its row on screen.
	if out, err := tmux("send-keys", "-t", "demo", "+"); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	added := regexp.MustCompile(`(?s)demo-w9\s+\w+.*added demo-w9 \(selected\)`)
	if screen := waitScreen(t, capture, 5*time.Second, added.MatchString); !added.MatchString(screen) {
		t.Fatalf("the added worker is not confirmed and shown after +:\n%s", screen)
	}
	// q quits, and the run's verdict stays on the terminal.
	_, _ = tmux("send-keys", "-t", "demo", "q")
	quit := func(screen string) bool { return strings.Contains(screen, "EXITED") }
	if screen := waitScreen(t, capture, 10*time.Second, quit); !strings.Contains(screen, "verdict: SAFE") || !strings.Contains(screen, "EXITED 0") {
		t.Fatalf("the demo did not quit with its verdict on q:\n%s", screen)
	}
}

// `lockscope demo --compare` in a real terminal: the lock table holds both runs' keys, the demo
// pane a column per run, and q prints both verdicts, exit 0 (the naive run's overlaps do not
// fail it).
func TestDemoCompareTUIInTmux(t *testing.T) {
	redistest.Slow(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not on PATH (apt-get install tmux)")
	}
	bin := cliBinary(t)
	sock := fmt.Sprintf("lockscope-compare-test-%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	command := fmt.Sprintf("env -u %s -u %s TERM=xterm-256color %s demo --compare --scenario pause --ttl 1s; echo EXITED $?; sleep 30", envRedisURL, envPassword, bin)
	if out, err := tmux("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", command); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	capture := func() string {
		out, _ := tmux("capture-pane", "-p", "-t", "demo")
		return out
	}
	both := regexp.MustCompile(`(?s)lock:demo:\w+\s+demo-w\d.*lock:naive:\w+\s+demo-w\d.*locklib\s+protection fencing-tokens.*│ naive\s+protection none`)
	if screen := waitScreen(t, capture, 20*time.Second, both.MatchString); !both.MatchString(screen) {
		t.Fatalf("no lock table with both runs' keys and no demo pane with both columns within 20s:\n%s", screen)
	}
	_, _ = tmux("send-keys", "-t", "demo", "q")
	quit := func(screen string) bool { return strings.Contains(screen, "EXITED") }
	screen := waitScreen(t, capture, 10*time.Second, quit)
	if !strings.Contains(screen, "compare:") || !strings.Contains(screen, "EXITED 0") {
		t.Fatalf("the demo did not quit with the comparison and exit 0 on q:\n%s", screen)
	}
}

// waitScreen polls the screen until ok holds or timeout passes, and returns the last screen.
func waitScreen(t *testing.T, capture func() string, timeout time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	screen := capture()
	for !ok(screen) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		screen = capture()
	}
	return screen
}
