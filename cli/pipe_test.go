package cli

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestLsIntoClosedPipe: `lockscope ls ... | head -1` prints the one line and the process ends
// at once, quietly (killed by SIGPIPE, as other tools are, or exit 0), whatever the form.
func TestLsIntoClosedPipe(t *testing.T) {
	s := redistest.Start(t)
	redistest.LoadLocks(t, s.Client(), 30000)
	bin := cliBinary(t)
	for _, args := range []string{"--json", "", "--json --sort ttl", "--sort ttl", "--json --limit 20000", "--sort key --limit 20000"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		script := bin + " ls " + args + " --redis " + redisURL(s.Addr) + ` 2>stderr | head -1 >/dev/null; echo "${PIPESTATUS[0]}"; cat stderr`
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("ls %s | head -1: %v (%s)", args, err, out)
		}
		status, stderr, _ := strings.Cut(string(out), "\n")
		if status != "141" && status != "0" || stderr != "" {
			t.Errorf("ls %s | head -1: exit %s, stderr %q; want SIGPIPE or 0, nothing on stderr", args, status, stderr)
		}
	}
}
