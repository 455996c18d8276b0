package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/redis/go-redis/v9"
)

// sharedFields are the fields of a shared primitive's `shared` object (docs/cli.md).
var (
	sharedFields = map[string]string{"mode": "string|null", "holders": "array", "holders_known": "bool", "limit": "int|null",
		"available": "int|null", "in_use": "int|null", "expired": "int", "waiters": "array", "truncated": "bool"}
	sharedHolderFields = map[string]string{"id": "string", "mode": "string", "count": "int", "ttl_ms": "int", "expired": "bool",
		"node": "string", "trace": "string", "acquired_at": "time|null", "field": "string", "leases": "array"}
	leaseFields        = map[string]string{"member": "string", "deadline_ms": "int", "ttl_ms": "int"}
	sharedWaiterFields = map[string]string{"id": "string", "mode": "string", "ttl_ms": "int", "value": "string"}
)

// seedShared writes a lockscope read lock of two readers, a lockscope write lock with a queued
// reader, a lockscope semaphore of 3 with 2 out, and Redisson's RSemaphore and
// RPermitExpirableSemaphore (one permit of 16 raw bytes), as their libraries lay them out.
func seedShared(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	member := func(mode protocol.Mode, n int, node, rand string) string {
		return protocol.LeaseMember{Mode: mode, Op: "6f1c0a9e3b2d4c51:" + string(rune('0'+n)),
			Value: protocol.Value{Node: node, Trace: "t-" + node, AcquiredAt: now.Add(-time.Second), Rand: rand}}.String()
	}
	z := func(ttl time.Duration, m string) redis.Z {
		return redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: m}
	}
	for _, err := range []error{
		c.ZAdd(ctx, "lock:doc", z(20*time.Second, member(protocol.ModeRead, 1, "api-1", "00000000000000aa")),
			z(30*time.Second, member(protocol.ModeRead, 2, "api-2", "00000000000000bb"))).Err(),
		c.PExpire(ctx, "lock:doc", 30*time.Second).Err(),
		c.ZAdd(ctx, "lock:edit", z(15*time.Second, member(protocol.ModeWrite, 3, "api-4", "00000000000000cc"))).Err(),
		c.PExpire(ctx, "lock:edit", 15*time.Second).Err(),
		c.ZAdd(ctx, protocol.WaitQueueKey("lock:edit"), redis.Z{Score: 1, Member: "6f1c0a9e3b2d4c51:9|30000|r|api-5:-:1764400000123:00000000000000dd"}).Err(),
		c.ZAdd(ctx, "lock:pool", z(40*time.Second, member(protocol.ModePermit, 4, "job-1", "00000000000000ee")),
			z(50*time.Second, member(protocol.ModePermit, 5, "job-2", "00000000000000ff"))).Err(),
		c.PExpire(ctx, "lock:pool", 50*time.Second).Err(),
		c.Set(ctx, protocol.LimitKey("lock:pool"), "3", 0).Err(),
		c.Set(ctx, "lock:rsem", "3", 0).Err(),
		c.Set(ctx, "lock:psem", "2", 0).Err(),
		c.ZAdd(ctx, "{lock:psem}:timeout", redis.Z{Score: float64(now.Add(10 * time.Minute).UnixMilli()), Member: "\x68\xb4\x8d\xe6\xcd\x39\x29\x16\x14\x1d\x80\x7d\x6e\x45\x52\xb4"}).Err(),
		c.Set(ctx, "lock:naive", "1", time.Minute).Err(), // a naive lock's "1" with its TTL: a lock
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCLISharedPrimitives: ls marks each shared primitive's kind in FORMAT and says who holds
// it in HOLDER (readers, the writer, permits used of the limit, a Redisson semaphore's
// available permits), flags no semaphore as without expiry; ls --json carries kind and shared
// (TestLockRecordsRenderAsTheLock: sorted, through the compact records, too); show lists
// holders with their own TTLs and the queued waiters.
func TestCLISharedPrimitives(t *testing.T) {
	s := redistest.Start(t)
	seedShared(t, s.Client())
	url := redisURL(s.Addr)

	r := runCLI(t, cliOpts{}, "ls", "--redis", url)
	expectExit(t, r, exitOK)
	rows := tableRows(r.stdout)
	for key, want := range map[string][]string{
		"lock:doc":   {"2 readers", "lockscope/rw"},
		"lock:edit":  {"api-4 (write)", "lockscope/rw"},
		"lock:pool":  {"2/3 permits", "lockscope/sem"},
		"lock:rsem":  {"3 available", "redisson/sem"},
		"lock:psem":  {"1/3 permits", "redisson/psem"},
		"lock:naive": {"opaque"},
	} {
		for _, cell := range want {
			if !strings.Contains(rows[key], cell) {
				t.Errorf("ls: %s row %q has no %q", key, rows[key], cell)
			}
		}
		// lock:rsem may as well be a naive lock whose EXPIRE never came: it keeps the flag.
		if flagged := strings.Contains(rows[key], "NO-EXPIRY"); flagged != (key == "lock:rsem") || strings.Contains(rows[key], "STUCK") {
			t.Errorf("ls: %s flagged wrongly: %q", key, rows[key])
		}
	}
	if !strings.Contains(r.stdout, "6 locks, 1 without expiry") {
		t.Errorf("ls summary:\n%s", r.stdout)
	}

	r = runCLI(t, cliOpts{}, "ls", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	for _, obj := range jsonLines(t, r.stdout) {
		checkFields(t, obj["key"].(string), obj, lsFields)
		checkShared(t, obj)
	}

	// show's rows, their columns' padding folded into one space.
	for key, wants := range map[string][]string{
		"lock:doc": {"kind rwlock", "shared read-write lock, held for read: 2 levels held",
			"holders 00000000000000aa read ×1 ttl ", "node api-2 trace t-api-2 acquired "},
		"lock:edit": {"holder api-4 (write)", "queued 6f1c0a9e3b2d4c51:9 read ttl 30s value api-5:-:1764400000123:00000000000000dd"},
		"lock:rsem": {"shared semaphore: permits in use not recorded, 3 available", "ttl " + present.MaybeSemaphoreNoTTL},
	} {
		r = runCLI(t, cliOpts{}, "show", "--redis", url, key)
		expectExit(t, r, exitOK)
		out := strings.Join(strings.Fields(r.stdout), " ")
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("show %s: no %q in\n%s", key, want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "decoded") {
			t.Errorf("show %s: a shared primitive's value decoded as a lock's:\n%s", key, r.stdout)
		}
	}
	r = runCLI(t, cliOpts{}, "show", "--json", "--redis", url, "lock:psem")
	var psem map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &psem); err != nil {
		t.Fatal(err)
	}
	sh := psem["shared"].(map[string]any)
	holder := sh["holders"].([]any)[0].(map[string]any)
	lease := holder["leases"].([]any)[0].(map[string]any)
	if psem["kind"] != "permit-semaphore" || sh["limit"] != 3.0 || sh["in_use"] != 1.0 || holder["id"] != "68b48de6cd392916141d807d6e4552b4" ||
		lease["member"] != `h\xb4\x8d\xe6\xcd9)\x16\x14\x1d\x80}nER\xb4` || holder["ttl_ms"].(float64) < 590000 {
		t.Errorf("show --json lock:psem: %s", r.stdout)
	}
}

// checkShared checks obj's kind and, for a shared primitive, the fields of its shared object.
func checkShared(t *testing.T, obj map[string]any) {
	t.Helper()
	key := obj["key"].(string)
	sh, _ := obj["shared"].(map[string]any)
	if (obj["kind"] == "lock") != (sh == nil) {
		t.Errorf("%s: kind %v with shared %v", key, obj["kind"], obj["shared"])
	}
	if sh == nil {
		return
	}
	checkFields(t, key+" shared", sh, sharedFields)
	for _, h := range sh["holders"].([]any) {
		checkFields(t, key+" holder", h.(map[string]any), sharedHolderFields)
		for _, le := range h.(map[string]any)["leases"].([]any) {
			checkFields(t, key+" lease", le.(map[string]any), leaseFields)
		}
	}
	for _, w := range sh["waiters"].([]any) {
		checkFields(t, key+" waiter", w.(map[string]any), sharedWaiterFields)
	}
}
