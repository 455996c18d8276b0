package cli

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// redissonCases are the peer's nine locks (internal/redistest/redissonpeer/README.md).
var redissonCases = []string{"reentrant", "lease", "fair", "rw-read", "rw-write", "sem", "psem", "fenced", "waited"}

// TestRedissonPeer runs lockscope against a real Redisson 3.52.0 client holding every kind of
// lock it has (one JVM for the whole test): each lock is one row with its fence and waiters,
// none of Redisson's companion keys is a row, and a force-release wakes a blocked lock() and
// a fair lock's queued waiter at once, as Redisson's own unlock does, instead of at their next
// retry (9.6-24 s later).
func TestRedissonPeer(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	peer := redistest.StartRedissonPeer(t, srv)
	url := redisURL(srv.Addr)

	for _, pattern := range []string{"*", "*lock:redisson:*"} {
		r := runCLI(t, cliOpts{}, "ls", "--json", "--redis", url, "--pattern", pattern)
		expectExit(t, r, 0)
		rows := map[string]map[string]any{}
		for _, row := range jsonLines(t, r.stdout) {
			rows[row["key"].(string)] = row
		}
		for _, c := range redissonCases {
			if rows["lock:redisson:"+c] == nil {
				t.Errorf("ls --pattern %q: no row for lock:redisson:%s", pattern, c)
			}
		}
		if len(rows) != len(redissonCases) {
			keys := make([]string, 0, len(rows))
			for k := range rows {
				keys = append(keys, k)
			}
			t.Errorf("ls --pattern %q: %d rows %q, want the %d locks and no companion key", pattern, len(rows), keys, len(redissonCases))
		}
		for _, c := range []string{"reentrant", "lease", "fair", "rw-read", "rw-write", "fenced", "waited"} {
			if f := rows["lock:redisson:"+c]["format"]; f != "redisson" {
				t.Errorf("ls --pattern %q: lock:redisson:%s format %v, want redisson", pattern, c, f)
			}
		}
		if f := rows["lock:redisson:fenced"]["fence"]; f != 1.0 {
			t.Errorf("ls --pattern %q: lock:redisson:fenced fence %v, want the RFencedLock token 1", pattern, f)
		}
	}

	// Waiters: the fair queue's waiter, the plain lock's subscribed waiter, nobody elsewhere;
	// unknown (null) for what is not a lock Redisson queues for.
	for c, want := range map[string]any{"fair": 1.0, "waited": 1.0, "lease": 0.0, "reentrant": 0.0, "rw-write": 0.0, "sem": nil} {
		r := runCLI(t, cliOpts{}, "show", "--json", "--redis", url, "lock:redisson:"+c)
		expectExit(t, r, 0)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("show lock:redisson:%s: %v\n%s", c, err, r.stdout)
		}
		if got["waiters"] != want {
			t.Errorf("show lock:redisson:%s: waiters %v, want %v", c, got["waiters"], want)
		}
	}
	if r := runCLI(t, cliOpts{}, "show", "--redis", url, "lock:redisson:fenced"); !strings.Contains(r.stdout, "fence      1") {
		t.Errorf("show lock:redisson:fenced: no fence 1 in\n%s", r.stdout)
	}

	// The console's W column: the same counts, and `-` where nobody can tell (a semaphore, a
	// redsync lock: their waiters poll), never 0.
	if err := srv.Client().Set(context.Background(), "lock:redsync", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s := startTUI(t, "--redis", url, "--pattern", "lock:*")
	want := map[string]string{"lock:redisson:fair": "1", "lock:redisson:waited": "1", "lock:redisson:lease": "0",
		"lock:redisson:sem": "-", "lock:redsync": "-"}
	var got map[string]string
	s.waitFor("the W column", 15*time.Second, func(scr string) bool {
		got = waiterCells(scr, want)
		return maps.Equal(got, want)
	})
	s.quit()

	// Force-release: the waiter takes the lock within moments, not at its next retry.
	for key, event := range map[string]string{"lock:redisson:waited": "B-ACQUIRED", "lock:redisson:fair": "FAIR-WAITER-ACQUIRED"} {
		released := time.Now()
		r := runCLI(t, cliOpts{}, "release", "--yes", "--redis", url, key)
		expectExit(t, r, 0)
		if line, ok := peer.Event(event, 3*time.Second); !ok {
			t.Errorf("release %s: no %s within 3s of the release", key, event)
		} else {
			t.Logf("release %s: %s %v after the release", key, line, time.Since(released).Round(time.Millisecond))
		}
	}
}

// waiterCells reads the W column of the console's table on the rows of keys: the cell under
// the header's W (a terminal cell is a rune on these rows).
func waiterCells(screen string, keys map[string]string) map[string]string {
	lines := strings.Split(screen, "\n")
	col := -1
	for _, line := range lines {
		if i := strings.Index(line, " W FORMAT"); i >= 0 && strings.Contains(line, "KEY") {
			col = len([]rune(line[:i])) + 1
		}
	}
	cells := map[string]string{}
	for _, line := range lines {
		fields, r := strings.Fields(line), []rune(line)
		if col < 0 || len(fields) == 0 || len(r) <= col {
			continue
		}
		if key := strings.TrimLeft(fields[0], "∞!"); keys[key] != "" {
			cells[key] = string(r[col])
		}
	}
	return cells
}
