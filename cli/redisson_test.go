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

	// Waiters: the fair queue's waiter, the plain lock's subscribed waiter, nobody elsewhere
	// (a semaphore's waiters subscribe to its channel, redisson_sc).
	for c, want := range map[string]any{"fair": 1.0, "waited": 1.0, "lease": 0.0, "reentrant": 0.0, "rw-write": 0.0, "sem": 0.0} {
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
	checkRedissonShared(t, url, peer)

	// The console's W column: the same counts, and `-` where nobody can tell (a redsync lock:
	// its waiters poll), never 0.
	if err := srv.Client().Set(context.Background(), "lock:redsync", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s := startTUI(t, "--redis", url, "--pattern", "lock:*")
	want := map[string]string{"lock:redisson:fair": "1", "lock:redisson:waited": "1", "lock:redisson:lease": "0",
		"lock:redisson:sem": "0", "lock:redsync": "-"}

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

// checkRedissonShared checks the peer's shared primitives (cases 4 to 7) as ls and show read
// them: two readers each with its own TTL (at most the watchdog's 30 s), the writer named by
// its thread without ":write", the RSemaphore (trySetPermits(5), acquire(2)) marked a semaphore
// with 3 available, its holders unknown and NO-EXPIRY all the same (a naive lock whose EXPIRE
// never came reads the same), and the RPermitExpirableSemaphore (no NO-EXPIRY)
// (trySetPermits(3), acquire(10, MINUTES)) one permit of 3 in use, the one acquire returned,
// expiring in about 10 minutes.
func checkRedissonShared(t *testing.T, url string, peer *redistest.RedissonPeer) {
	t.Helper()
	r := runCLI(t, cliOpts{}, "ls", "--json", "--redis", url, "--pattern", "lock:redisson:*")
	expectExit(t, r, 0)
	rows := map[string]map[string]any{}
	for _, row := range jsonLines(t, r.stdout) {
		rows[row["key"].(string)] = row
		checkShared(t, row)
	}
	shared := func(c string) (map[string]any, []map[string]any) {
		sh, _ := rows["lock:redisson:"+c]["shared"].(map[string]any)
		var holders []map[string]any
		if sh != nil {
			for _, h := range sh["holders"].([]any) {
				holders = append(holders, h.(map[string]any))
			}
		}
		return sh, holders
	}
	sh, readers := shared("rw-read")
	if rows["lock:redisson:rw-read"]["kind"] != "rwlock" || sh["mode"] != "read" || len(readers) != 2 {
		t.Errorf("rw-read: %v", rows["lock:redisson:rw-read"])
	}
	for _, h := range readers {
		leases, _ := h["leases"].([]any)
		if ttl := h["ttl_ms"].(float64); h["mode"] != "read" || h["count"] != 1.0 || ttl <= 0 || ttl > 30000 || len(leases) != 1 ||
			!strings.HasSuffix(leases[0].(map[string]any)["member"].(string), ":rwlock_timeout:1") {
			t.Errorf("rw-read reader %v", h)
		}
	}
	sh, writers := shared("rw-write")
	if sh["mode"] != "write" || len(writers) != 1 || writers[0]["mode"] != "write" || strings.HasSuffix(writers[0]["id"].(string), ":write") ||
		writers[0]["field"] != writers[0]["id"].(string)+":write" {
		t.Errorf("rw-write: %v", sh)
	}
	sem := rows["lock:redisson:sem"]
	if sh, _ := shared("sem"); sem["kind"] != "semaphore" || sh["available"] != 3.0 || sh["holders_known"] != false || sh["in_use"] != nil {
		t.Errorf("sem: %v", sem)
	}
	sh, permits := shared("psem")
	line, _ := peer.Event("PSEM-PERMIT ", time.Second)
	permit := strings.TrimPrefix(line, "PSEM-PERMIT ")
	if rows["lock:redisson:psem"]["kind"] != "permit-semaphore" || sh["in_use"] != 1.0 || sh["limit"] != 3.0 || sh["available"] != 2.0 ||
		len(permits) != 1 || permits[0]["id"] != permit || permits[0]["ttl_ms"].(float64) < 500000 || permits[0]["ttl_ms"].(float64) > 600000 {
		t.Errorf("psem (permit %s): %v", permit, sh)
	}
	r = runCLI(t, cliOpts{}, "ls", "--redis", url, "--pattern", "lock:redisson:*")
	rowsText := tableRows(r.stdout)
	for key, cells := range map[string][]string{"lock:redisson:rw-read": {"2 readers", "redisson/rw"}, "lock:redisson:sem": {"3 available", "redisson/sem"},
		"lock:redisson:psem": {"1/3 permits", "redisson/psem"}} {
		for _, cell := range cells {
			if !strings.Contains(rowsText[key], cell) || strings.Contains(rowsText[key], "NO-EXPIRY") != (key == "lock:redisson:sem") {
				t.Errorf("ls: %s row %q, want %q and NO-EXPIRY only on the RSemaphore", key, rowsText[key], cell)
			}
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
