package cli

import (
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/redistest"
)

// The failover-replica scenario headless: its own master, replica and sentinel, one master
// killed and its replica promoted, the counters in the JSON, no stale write accepted, exit 0.
func TestDemoFailoverReplicaJSON(t *testing.T) {
	t.Parallel()
	if _, err := redistest.Binary(); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliOpts{}, "demo", "--scenario", "failover-replica", "--headless", "--duration", "8s", "--json")
	expectExit(t, r, 0)
	s := jsonLines(t, compactJSON(t, r.stdout))[0]
	for _, field := range []string{"promotions", "locks_lost", "overlapping_holders", "token_jumps", "token_regressions",
		"stale_accepted", "stale_rejected", "overlaps"} {
		if _, ok := s[field].(float64); !ok {
			t.Errorf("field %s: %#v, want a number", field, s[field])
		}
	}
	if s["promotions"].(float64) < 1 || s["stale_accepted"].(float64) != 0 || s["overlaps"].(float64) != 0 ||
		s["token_regressions"].(float64) != 0 || s["unsafe"] != false {
		t.Errorf("summary %s", r.stdout)
	}
	if server, _ := s["server"].(string); !strings.Contains(server, "sentinel") {
		t.Errorf("server %q, want the demo's own sentinel", server)
	}
	log, _ := s["promotion_log"].([]any)
	if len(log) == 0 {
		t.Fatalf("no promotion_log: %s", r.stdout)
	}
	p := log[0].(map[string]any)
	if p["from"] == p["to"] || len(p["resources"].([]any)) != 3 {
		t.Errorf("promotion %v", p)
	}
}

// It owns its servers: --redis and --redlock are refused, and so is a machine without
// redis-server, in one line that says what it needs.
func TestDemoFailoverReplicaRefusals(t *testing.T) {
	for _, args := range [][]string{
		{"--redis", "redis://127.0.0.1:1"},
		{"--redlock", "3"},
	} {
		r := runCLI(t, cliOpts{}, append([]string{"demo", "--scenario", "failover-replica", "--headless"}, args...)...)
		expectExit(t, r, exitUsage)
		if !strings.Contains(r.stderr, "its own master, replica and sentinel") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
	t.Setenv("PATH", t.TempDir())
	r := runCLI(t, cliOpts{}, "demo", "--scenario", "failover-replica", "--headless")
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "needs redis-server on PATH") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("without redis-server: stderr %q", r.stderr)
	}
}
