package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestBinaryExitCodesAndStderr runs the built binary: what main.go and Run give the real
// process (the exit status, one "lockscope: ..." line on stderr), which in-process tests of
// run cannot see.
func TestBinaryExitCodesAndStderr(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("127.0.0.1:%d", port)
	cases := []struct {
		args   []string
		code   int
		stderr string // the one line on stderr; "" for none
	}{
		{[]string{"version"}, exitOK, ""},
		{[]string{"ls", "--json", "--redis", redisURL(s.Addr)}, exitOK, ""},
		{[]string{"ls", "--sort", "size", "--redis", redisURL(s.Addr)}, exitUsage, `lockscope: --sort "size": want one of`},
		{[]string{"show", "lock:nothing", "--redis", redisURL(s.Addr)}, exitGone, "lockscope: lock:nothing does not exist"},
		{[]string{"release", "lock:old", "--expect", "x", "--redis", redisURL(s.Addr)}, exitChanged, "lockscope: lock:old: the lock's value differs from --expect"},
		{[]string{"ls", "--redis", "redis://" + dead}, exitUnreachable, "lockscope: cannot reach Redis at " + dead},
	}
	for _, c := range cases {
		r := runBinary(t, c.args...)
		expectExit(t, r, c.code)
		stderr := strings.TrimSpace(r.stderr)
		if c.stderr == "" && stderr != "" || !strings.HasPrefix(stderr, c.stderr) || strings.Contains(stderr, "\n") {
			t.Errorf("%v: stderr %q, want one line starting %q", c.args, r.stderr, c.stderr)
		}
	}
	if r := runBinary(t, "version"); !strings.HasPrefix(r.stdout, "lockscope ") {
		t.Errorf("version: stdout %q", r.stdout)
	}
}
