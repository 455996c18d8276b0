package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestCLIListSummaryCountsLocksOfTheWholeCensus: the summary counts locks apart from the other
// keys under the pattern (a list, a set), and describes the whole census even when --limit
// shows a few rows, in both the sorted and the streamed table.
func TestCLIListSummaryCountsLocksOfTheWholeCensus(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	if err := s.Client().SAdd(context.Background(), "lock:set", "x").Err(); err != nil {
		t.Fatal(err)
	}
	url := redisURL(s.Addr)
	const whole = "4 locks, 2 other keys (not locks), 1 without expiry, 1 stuck (held > 5m00s)"

	r := runCLI(t, cliOpts{}, "ls", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "\n"+whole+"\n") {
		t.Errorf("summary, want %q:\n%s", whole, r.stdout)
	}
	for _, order := range []string{"key", "none"} {
		// The first key in key order is lock:binary: no flag of its own.
		r = runCLI(t, cliOpts{}, "ls", "--redis", url, "--sort", order, "--limit", "1")
		expectExit(t, r, exitOK)
		if want := "1 of 6 keys shown (--limit 1); in all: " + whole; !strings.Contains(r.stdout, want) {
			t.Errorf("--sort %s --limit 1: summary, want %q:\n%s", order, want, r.stdout)
		}
	}
}

// TestCLIShowOfANonLockSaysWhatItIs: `show` of a list says it is a list that lockscope does
// not treat as a lock (exit 1, docs/cli.md), not that a lock never frees itself.
func TestCLIShowOfANonLockSaysWhatItIs(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	r := runCLI(t, cliOpts{}, "show", "lock:list", "--redis", redisURL(s.Addr))
	expectExit(t, r, exitOther)
	if !strings.Contains(r.stderr, "lock:list is a list, not a lock: lockscope does not treat it as a lock") ||
		strings.Contains(r.stdout+r.stderr, "never frees itself") {
		t.Errorf("show of a list:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, "show", "lock:list", "--json", "--redis", redisURL(s.Addr))
	expectExit(t, r, exitOther)
	if objs := jsonLines(t, r.stdout); len(objs) != 1 || objs[0]["format"] != "not-a-lock" || objs[0]["type"] != "list" {
		t.Errorf("show --json of a list: %v", objs)
	}
}

// TestCLIAgesOnTheServersClock: ages are measured on the server's clock (TIME), the one the
// value was stamped with. A value stamped an hour ahead of it is flagged as clock skew
// instead of showing a negative age; one stamped 90 s before it shows 1m30s.
func TestCLIAgesOnTheServersClock(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	serverNow, err := s.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(at time.Time) string { return fmt.Sprintf("api-1:-:%d:0123456789abcdef", at.UnixMilli()) }
	if err := s.Client().Set(ctx, "lock:ahead", stamp(serverNow.Add(time.Hour)), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Set(ctx, "lock:past", stamp(serverNow.Add(-90*time.Second)), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	url := redisURL(s.Addr)
	r := runCLI(t, cliOpts{}, "ls", "--redis", url)
	expectExit(t, r, exitOK)
	rows := tableRows(r.stdout)
	if f := strings.Fields(rows["lock:ahead"]); len(f) < 4 || f[3] != "skew" || !strings.Contains(rows["lock:ahead"], "SKEW +59m5") {
		t.Errorf("lock:ahead row %q: want AGE skew and SKEW +59m5x", rows["lock:ahead"])
	}
	if f := strings.Fields(rows["lock:past"]); len(f) < 4 || !strings.HasPrefix(f[3], "1m3") {
		t.Errorf("lock:past row %q: want AGE 1m3x", rows["lock:past"])
	}
	if !strings.Contains(r.stdout, "2 locks, 0 without expiry, 0 stuck (held > 5m00s), 1 with clock skew") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	// --json, streamed and sorted: the same ages, none (null) for a stamp ahead of the clock.
	for _, sort := range []string{"none", "key"} {
		r = runCLI(t, cliOpts{}, "ls", "--json", "--sort", sort, "--redis", url)
		expectExit(t, r, exitOK)
		seen := 0
		for _, obj := range jsonLines(t, r.stdout) {
			age, _ := obj["age_ms"].(float64)
			switch obj["key"] {
			case "lock:ahead":
				seen++
				if obj["age_ms"] != nil {
					t.Errorf("--sort %s: lock:ahead age_ms %v, want null (clock skew)", sort, obj["age_ms"])
				}
			case "lock:past":
				seen++
				if age < 90_000 || age > 100_000 {
					t.Errorf("--sort %s: lock:past age_ms %v, want about 90000", sort, obj["age_ms"])
				}
			}
		}
		if seen != 2 {
			t.Errorf("--sort %s: %d of lock:ahead and lock:past listed:\n%s", sort, seen, r.stdout)
		}
	}
	r = runCLI(t, cliOpts{}, "show", "lock:ahead", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "ahead of the server's clock: clock skew, age unknown") {
		t.Errorf("show of a lock stamped in the future:\n%s", r.stdout)
	}
}
