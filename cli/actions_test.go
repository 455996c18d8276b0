package cli

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
)

var resultFields = map[string]string{
	"action": "string", "key": "string", "holder": "string|null", "keys": "array|null", "outcome": "string", "seen": "string", "current": "string|null",
	"ttl_ms": "int|null", "instances": "array", "audit_error": "string|null",
}

var instanceResultFields = map[string]string{"addr": "string", "outcome": "string", "current": "string|null", "error": "string|null"}

func TestCLIReleaseExitCodes(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	url := redisURL(s.Addr)

	// A --expect that differs: refused, the holder is printed, nothing deleted.
	r := runCLI(t, cliOpts{}, "release", "lock:old", "--expect", "api-7:req-0:1:0000000000000000", "--redis", url)
	expectExit(t, r, exitChanged)
	if !strings.Contains(r.stdout, "the lock's value differs from --expect") || !strings.Contains(r.stdout, oldLock) {
		t.Errorf("a --expect that differs does not name the holder:\n%s", r)
	}
	if v, ok := redistest.Value(t, c, "lock:old"); !ok || v != oldLock {
		t.Fatal("a refused release deleted the lock")
	}

	// Without --expect and without a terminal: refuses, deletes nothing.
	r = runCLI(t, cliOpts{stdin: "y\n"}, "release", "lock:old", "--redis", url)
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "not a terminal") || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("no clear message:\n%s", r)
	}
	if _, ok := redistest.Value(t, c, "lock:old"); !ok {
		t.Fatal("released without confirmation")
	}

	// The exact value: released, with JSON output.
	r = runCLI(t, cliOpts{}, "release", "lock:old", "--expect", oldLock, "--reason", "stuck job", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	checkFields(t, "release --json", objs[0], resultFields)
	for _, in := range objs[0]["instances"].([]any) {
		checkFields(t, "release --json instance", in.(map[string]any), instanceResultFields)
	}
	if objs[0]["outcome"] != "released" || objs[0]["seen"] != oldLock {
		t.Errorf("release --json = %v", objs[0])
	}
	if _, ok := redistest.Value(t, c, "lock:old"); ok {
		t.Fatal("lock still there")
	}
	if v, _ := redistest.Value(t, c, protocol.FenceKey("lock:old")); v != "42" {
		t.Fatal("the fence counter was touched")
	}

	// Already gone.
	r = runCLI(t, cliOpts{}, "release", "lock:old", "--expect", oldLock, "--redis", url)
	expectExit(t, r, exitGone)
	r = runCLI(t, cliOpts{}, "release", "lock:old", "--yes", "--redis", url)
	expectExit(t, r, exitGone)

	// --yes reads the value, shows it and releases it; hashes too.
	r = runCLI(t, cliOpts{}, "release", "lock:redisson", "--yes", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stderr, "hash{"+redisson+"=2}") {
		t.Errorf("the value was not shown before acting:\n%s", r)
	}
	if c.Exists(context.Background(), "lock:redisson").Val() != 0 {
		t.Fatal("hash lock not released")
	}

	// Not a lock: never touched.
	r = runCLI(t, cliOpts{}, "release", "lock:list", "--yes", "--redis", url)
	expectExit(t, r, exitOther)
	if c.LLen(context.Background(), "lock:list").Val() != 1 {
		t.Fatal("list touched")
	}
	r = runCLI(t, cliOpts{}, "release", "--redis", url)
	expectExit(t, r, exitUsage)
}

func TestCLIReleaseAsksOnTheTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("needs script(1) for a pseudo-terminal")
	}
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	for _, tc := range []struct {
		answer   string
		code     int
		released bool
	}{{"\n", exitOther, false}, {"n\n", exitOther, false}, {"yes\n", exitOK, true}} {
		// script(1) runs the command on a pseudo-terminal and feeds it our stdin.
		cmdline := cliBinary(t) + " release lock:old --redis " + redisURL(s.Addr)
		r := runCommand(t, tc.answer, "script", "-qec", cmdline, "/dev/null")
		if r.code != tc.code || !strings.Contains(r.stdout, "[y/N]") {
			t.Fatalf("answer %q: %s", tc.answer, r)
		}
		if _, held := redistest.Value(t, c, "lock:old"); held == tc.released {
			t.Fatalf("answer %q: lock held=%v", tc.answer, held)
		}
	}
	// Each answer is in the audit trail, the two No's as declined.
	r := runCLI(t, cliOpts{}, "audit", "--json", "--redis", redisURL(s.Addr))
	var results []any
	for _, o := range jsonLines(t, r.stdout) {
		results = append(results, o["result"])
	}
	if want := []any{"released", "declined", "declined"}; !slices.Equal(results, want) {
		t.Errorf("audit results %v, want %v (newest first)", results, want)
	}
}

// TestCLIAuditRecordsStoppedAttempts: an attempt that stops before its script runs is recorded
// too, with why, as docs/cli.md promises for every attempt.
func TestCLIAuditRecordsStoppedAttempts(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	url := redisURL(s.Addr)
	expectExit(t, runCLI(t, cliOpts{}, "release", "lock:old", "--reason", "INC-9", "--redis", url), exitUsage)
	expectExit(t, runCLI(t, cliOpts{}, "extend", "lock:nothing", "--ttl", "1m", "--yes", "--redis", url), exitGone)
	expectExit(t, runCLI(t, cliOpts{}, "release", "lock:list", "--yes", "--redis", url), exitOther)

	r := runCLI(t, cliOpts{}, "audit", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	want := []struct{ action, key, result, seen, reason string }{
		{"release", "lock:list", "not_a_lock", "", ""},
		{"extend", "lock:nothing", "already_gone", "", ""},
		{"release", "lock:old", "no_terminal", oldLock, "INC-9"},
	}
	if len(objs) != len(want) {
		t.Fatalf("%d audit records, want %d:\n%s", len(objs), len(want), r.stdout)
	}
	for i, w := range want {
		o := objs[i]
		if o["action"] != w.action || o["key"] != w.key || o["result"] != w.result || o["seen"] != w.seen || o["reason"] != w.reason {
			t.Errorf("record %d = %v, want %+v", i, o, w)
		}
	}
	if objs[1]["ttl_ms"] != 60000.0 {
		t.Errorf("the stopped extend does not record the TTL asked for: %v", objs[1])
	}
}

// runCommand runs any program with stdin and returns its output and exit code.
func runCommand(t *testing.T, stdin string, name string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := cliRun{stdout: out.String(), stderr: errOut.String()}
	if exitErr, ok := err.(*exec.ExitError); ok {
		r.code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCLIExtend(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	url := redisURL(s.Addr)
	ctx := context.Background()

	r := runCLI(t, cliOpts{}, "extend", "lock:old", "--ttl", "2h", "--expect", "someone-else", "--redis", url)
	expectExit(t, r, exitChanged)
	if ttl := c.PTTL(ctx, "lock:old").Val(); ttl > time.Hour {
		t.Fatalf("a refused extend changed the TTL to %v", ttl)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:old", "--ttl", "2h", "--expect", oldLock, "--json", "--redis", url)
	expectExit(t, r, exitOK)
	obj := jsonLines(t, r.stdout)[0]
	checkFields(t, "extend --json", obj, resultFields)
	if obj["outcome"] != "extended" || obj["ttl_ms"] != float64(2*time.Hour/time.Millisecond) {
		t.Errorf("extend --json = %v", obj)
	}
	if ttl := c.PTTL(ctx, "lock:old").Val(); ttl < 119*time.Minute {
		t.Fatalf("TTL after extend: %v", ttl)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:forever", "--ttl", "30s", "--yes", "--allow-shorten", "--redis", url)
	expectExit(t, r, exitOK)
	if ttl := c.PTTL(ctx, "lock:forever").Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("a lock without expiry got TTL %v, want 30s", ttl)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:gone", "--ttl", "30s", "--expect", "x", "--redis", url)
	expectExit(t, r, exitGone)
	r = runCLI(t, cliOpts{}, "extend", "lock:old", "--expect", oldLock, "--redis", url)
	expectExit(t, r, exitUsage) // --ttl missing
}

func TestCLIAudit(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	url := redisURL(s.Addr)
	runCLI(t, cliOpts{}, "extend", "lock:old", "--ttl", "90s", "--expect", "nope", "--redis", url, "--operator", "carol")
	runCLI(t, cliOpts{}, "release", "lock:old", "--expect", oldLock, "--reason", "INC-7 stuck", "--redis", url, "--operator", "carol")

	r := runCLI(t, cliOpts{}, "audit", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 2 {
		t.Fatalf("%d audit records, want 2:\n%s", len(objs), r)
	}
	spec := map[string]string{
		"id": "string", "time": "time|null", "operator": "string", "action": "string", "key": "string",
		"seen": "string", "result": "string", "error": "string|null", "reason": "string", "ttl_ms": "int|null",
		"instances": "string|null", "sources": "array", "holder": "string|null", "keys": "array|null",
	}
	for _, o := range objs {
		checkFields(t, "audit", o, spec)
	}
	if o := objs[0]; o["action"] != "release" || o["result"] != "released" || o["reason"] != "INC-7 stuck" ||
		o["operator"] != "carol" || o["seen"] != oldLock || o["key"] != "lock:old" {
		t.Errorf("newest record %v", o)
	}
	if o := objs[1]; o["action"] != "extend" || o["result"] != "value_differs" || o["ttl_ms"] != 90000.0 || o["seen"] != "nope" {
		t.Errorf("oldest record %v", o)
	}

	r = runCLI(t, cliOpts{}, "audit", "--limit", "1", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "INC-7 stuck") || strings.Contains(r.stdout, "value_differs") || !strings.HasSuffix(r.stdout, "\n1 record\n") {
		t.Errorf("audit --limit 1:\n%s", r.stdout)
	}
	r = runCLI(t, cliOpts{}, "ls", "--pattern", "lock:fore*", "--redis", url)
	if !strings.Contains(r.stdout, "\n1 lock, 1 without expiry") {
		t.Errorf("ls of one lock does not say \"1 lock\":\n%s", r.stdout)
	}
	// Reading the trail is allowed in read-only mode.
	expectExit(t, runCLI(t, cliOpts{}, "audit", "--read-only", "--redis", url), exitOK)
}

func TestCLIReadOnlyRefusesEveryAction(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	url := redisURL(s.Addr)
	ctx := context.Background()
	ttlBefore := c.PTTL(ctx, "lock:old").Val()
	for _, args := range [][]string{
		{"release", "lock:old", "--expect", oldLock},
		{"release", "lock:old", "--yes"},
		{"extend", "lock:old", "--ttl", "9h", "--expect", oldLock},
		{"extend", "lock:forever", "--ttl", "9h", "--yes"},
	} {
		r := runCLI(t, cliOpts{}, append(args, "--read-only", "--redis", url)...)
		expectExit(t, r, exitReadOnly)
		if !strings.Contains(r.stderr, "read-only") {
			t.Errorf("%v: no clear message:\n%s", args, r)
		}
	}
	if v, ok := redistest.Value(t, c, "lock:old"); !ok || v != oldLock || c.PTTL(ctx, "lock:old").Val() > ttlBefore {
		t.Fatal("read-only mode changed lock:old")
	}
	if c.PTTL(ctx, "lock:forever").Val() != -1 {
		t.Fatal("read-only mode changed lock:forever")
	}
	if c.Exists(ctx, actions.DefaultAuditStream).Val() != 0 {
		t.Fatal("read-only mode wrote to the audit stream")
	}
	// Listing still works.
	expectExit(t, runCLI(t, cliOpts{}, "ls", "--read-only", "--redis", url), exitOK)
}
