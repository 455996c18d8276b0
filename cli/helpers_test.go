package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain of package cli: most tests run commands in-process (runCLI); the few that need the
// real process (a terminal, tmux, the exit status) share one lockscope binary built on first
// use (cliBinary) and removed here when the run ends.
func TestMain(m *testing.M) {
	quietRedisLog() // before any test: go-redis' logger is a global the tests' clients read
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// cliBinary builds the lockscope binary once per test run (go build -o <tmpdir>/lockscope github.com/lockscope/lockscope)
// and returns its path.
func cliBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "lockscope-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "lockscope")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/lockscope/lockscope").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// cliRun is the outcome of one command line.
type cliRun struct {
	stdout, stderr string
	code           int
}

func (r cliRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cliOpts changes how runCLI runs a command line.
type cliOpts struct {
	stdin string   // fed to stdin (a reader: not a terminal)
	env   []string // KEY=VALUE: the only environment the command sees
}

// runCLI runs the command line in-process, as Run would, with buffers for its streams and
// o.env as its whole environment (never the test's $REDIS_URL or $LOCKSCOPE_PASSWORD), and
// returns its output and exit code.
func runCLI(t testing.TB, o cliOpts, args ...string) cliRun {
	t.Helper()
	env := map[string]string{}
	for _, kv := range o.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var stdout, stderr bytes.Buffer
	code := run(args, IOStreams{In: strings.NewReader(o.stdin), Out: &stdout, ErrOut: &stderr},
		func(k string) string { return env[k] })
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// runBinary runs the built binary with args, without $REDIS_URL / $LOCKSCOPE_PASSWORD from the
// environment of the test, and returns its output and exit code.
func runBinary(t testing.TB, args ...string) cliRun {
	t.Helper()
	bin := cliBinary(t) // first: the build must not eat into the run's timeout
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliRun{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("running lockscope %v: %v", args, err)
	}
	return r
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, envRedisURL+"=") || strings.HasPrefix(kv, envPassword+"=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// expectExit fails the test unless r exited with code.
func expectExit(t testing.TB, r cliRun, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.code, code, r)
	}
}

// jsonLines decodes JSONL output into generic maps, so the tests see the wire types.
func jsonLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		objs = append(objs, m)
	}
	return objs
}

// redisURL is the URL of a test server.
func redisURL(addr string) string { return "redis://" + addr }
