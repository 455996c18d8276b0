package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/redis/go-redis/v9"
)

// lsFields is the JSON contract of `ls --json` (docs/cli.md): every field and its wire type.
var lsFields = map[string]string{
	"key": "string", "format": "string", "node": "string", "trace": "string",
	"acquired_at": "time|null", "age_ms": "int|null", "ttl_ms": "int", "reentry": "int|null",
	"fence": "int|null", "value": "string", "instances": "array", "kind": "string", "shared": "object|null",
}

var instanceFields = map[string]string{"addr": "string", "value": "string|null", "ttl_ms": "int|null"}

// checkFields asserts that obj has exactly the fields of spec, each of its type.
func checkFields(t *testing.T, what string, obj map[string]any, spec map[string]string) {
	t.Helper()
	for name := range obj {
		if _, ok := spec[name]; !ok {
			t.Errorf("%s: unexpected field %q", what, name)
		}
	}
	for name, typ := range spec {
		v, present := obj[name]
		if !present {
			t.Errorf("%s: field %q missing", what, name)
			continue
		}
		if !hasJSONType(v, typ) {
			t.Errorf("%s: field %q = %#v, want %s", what, name, v, typ)
		}
	}
}

func hasJSONType(v any, typ string) bool {
	for _, alt := range strings.Split(typ, "|") {
		switch x := v.(type) {
		case nil:
			if alt == "null" {
				return true
			}
		case string:
			if alt == "string" {
				return true
			}
			if _, err := time.Parse(time.RFC3339Nano, x); alt == "time" && err == nil {
				return true
			}
		case float64:
			if alt == "number" || alt == "int" && x == math.Trunc(x) {
				return true
			}
		case bool:
			if alt == "bool" {
				return true
			}
		case []any:
			if alt == "array" {
				return true
			}
		case map[string]any:
			if alt == "object" {
				return true
			}
		}
	}
	return false
}

const (
	oldLock   = "api-7:req-1:1700000000000:0123456789abcdef" // acquired in 2023: stuck
	redisson  = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	binaryVal = "\x00\xffbin\n"
)

// seedLocks writes one lock of each kind a census meets.
func seedLocks(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	fresh := fmt.Sprintf("worker-3:job-9:%d:fedcba9876543210:2", time.Now().UnixMilli())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, "lock:old", oldLock, time.Hour).Err())
	must(c.Set(ctx, protocol.FenceKey("lock:old"), "42", 0).Err())
	must(c.Set(ctx, "lock:forever", fresh, 0).Err())
	must(c.HSet(ctx, "lock:redisson", redisson, "2").Err())
	must(c.PExpire(ctx, "lock:redisson", 10*time.Minute).Err())
	must(c.Set(ctx, "lock:binary", binaryVal, 5*time.Minute).Err())
	must(c.RPush(ctx, "lock:list", "x").Err())
	must(c.Set(ctx, "other:key", "not matched", 0).Err())
}

func TestCLIListJSONContract(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	r := runCLI(t, cliOpts{}, "ls", "--json", "--redis", redisURL(s.Addr))
	expectExit(t, r, exitOK)

	byKey := map[string]map[string]any{}
	for _, obj := range jsonLines(t, r.stdout) {
		key, _ := obj["key"].(string)
		checkFields(t, key, obj, lsFields)
		insts, _ := obj["instances"].([]any)
		if len(insts) != 1 {
			t.Errorf("%s: %d instances, want 1 on a standalone server", key, len(insts))
		}
		for _, in := range insts {
			m, _ := in.(map[string]any)
			checkFields(t, key+" instance", m, instanceFields)
			if m["addr"] != s.Addr {
				t.Errorf("%s: instance addr %v, want %s", key, m["addr"], s.Addr)
			}
		}
		byKey[key] = obj
	}
	keys := slices.Sorted(maps.Keys(byKey))
	if want := []string{"lock:binary", "lock:forever", "lock:list", "lock:old", "lock:redisson"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}

	old := byKey["lock:old"]
	if old["format"] != "lockscope" || old["node"] != "api-7" || old["trace"] != "req-1" || old["fence"] != 42.0 ||
		old["acquired_at"] != "2023-11-14T22:13:20Z" || old["value"] != oldLock || old["reentry"] != nil {
		t.Errorf("lock:old = %v", old)
	}
	if ttl := old["ttl_ms"].(float64); ttl <= 0 || ttl > 3600000 {
		t.Errorf("lock:old ttl_ms %v", ttl)
	}
	if f := byKey["lock:forever"]; f["ttl_ms"] != -1.0 || f["reentry"] != 2.0 || f["fence"] != nil {
		t.Errorf("lock:forever = %v, want ttl_ms -1 and reentry 2", f)
	}
	if rs := byKey["lock:redisson"]; rs["format"] != "redisson" || rs["reentry"] != 2.0 || rs["acquired_at"] != nil || rs["age_ms"] != nil {
		t.Errorf("lock:redisson = %v", rs)
	}
	if v := byKey["lock:binary"]["value"].(string); v != `\x00\xffbin\n` {
		t.Errorf("binary value printed as %q, want it escaped", v)
	}
	if byKey["lock:list"]["format"] != "not-a-lock" {
		t.Errorf("lock:list = %v", byKey["lock:list"])
	}
}

func TestCLIListTableSortAndLimit(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	url := redisURL(s.Addr)

	r := runCLI(t, cliOpts{}, "ls", "--redis", url)
	expectExit(t, r, exitOK)
	rows := tableRows(r.stdout)
	if !strings.Contains(rows["lock:forever"], "NO-EXPIRY") || strings.Contains(rows["lock:forever"], "STUCK") {
		t.Errorf("lock:forever row %q: want NO-EXPIRY, not STUCK", rows["lock:forever"])
	}
	if !strings.Contains(rows["lock:old"], "STUCK") || strings.Contains(rows["lock:old"], "NO-EXPIRY") {
		t.Errorf("lock:old row %q: want STUCK", rows["lock:old"])
	}
	if !strings.Contains(r.stdout, "4 locks, 1 other key (not locks), 1 without expiry, 1 stuck") {
		t.Errorf("summary missing:\n%s", r.stdout)
	}
	// Held for minutes only: not stuck with the default, stuck with --stuck-after 1ms.
	r = runCLI(t, cliOpts{}, "ls", "--redis", url, "--stuck-after", "1ms")
	if !strings.Contains(tableRows(r.stdout)["lock:forever"], "STUCK") {
		t.Errorf("--stuck-after 1ms did not mark lock:forever:\n%s", r.stdout)
	}

	r = runCLI(t, cliOpts{}, "ls", "--json", "--sort", "ttl", "--redis", url)
	expectExit(t, r, exitOK)
	var order []string
	for _, obj := range jsonLines(t, r.stdout) {
		order = append(order, obj["key"].(string))
	}
	// Keys without expiry first (they never free themselves), then the soonest expiry
	// (binary 5m, redisson 10m, old 1h).
	if want := []string{"lock:forever", "lock:list", "lock:binary", "lock:redisson", "lock:old"}; !slices.Equal(order, want) {
		t.Errorf("--sort ttl: %v, want %v", order, want)
	}
	r = runCLI(t, cliOpts{}, "ls", "--json", "--sort", "age", "--limit", "2", "--redis", url)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 2 || objs[0]["key"] != "lock:old" || objs[1]["key"] != "lock:forever" {
		t.Errorf("--sort age --limit 2: %v", objs)
	}
	r = runCLI(t, cliOpts{}, "ls", "--sort", "size", "--redis", url)
	expectExit(t, r, exitUsage)

	r = runCLI(t, cliOpts{}, "ls", "--pattern", "other:*", "--json", "--redis", url)
	if objs := jsonLines(t, r.stdout); len(objs) != 1 || objs[0]["key"] != "other:key" {
		t.Errorf("--pattern other:*: %v", objs)
	}
}

// tableRows maps the first column of a table to its line.
func tableRows(out string) map[string]string {
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	return rows
}

func TestCLIShow(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	url := redisURL(s.Addr)

	r := runCLI(t, cliOpts{}, "show", "lock:old", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	spec := map[string]string{"type": "string", "truncated": "bool", "waiters": "int|null", "quorum": "object|null", "decoded": "object|null"}
	for k, v := range lsFields {
		spec[k] = v
	}
	checkFields(t, "show", objs[0], spec)
	decoded, _ := objs[0]["decoded"].(map[string]any)
	if decoded["node"] != "api-7" || decoded["rand"] != "0123456789abcdef" || decoded["acquired_at"] != "2023-11-14T22:13:20Z" {
		t.Errorf("decoded %v", decoded)
	}

	r = runCLI(t, cliOpts{}, "show", "lock:redisson", "--redis", url)
	expectExit(t, r, exitOK)
	for _, want := range []string{"redisson", "owners " + redisson + " ×2", "hash"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lock:redisson lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, cliOpts{}, "show", "lock:forever", "--redis", url)
	if !strings.Contains(r.stdout, present.NeverExpires) {
		t.Errorf("show of a lock without expiry does not say so:\n%s", r.stdout)
	}

	r = runCLI(t, cliOpts{}, "show", "lock:nothing", "--redis", url)
	expectExit(t, r, exitGone)
	r = runCLI(t, cliOpts{}, "show", "--redis", url)
	expectExit(t, r, exitUsage)
}

// TestCLIListJSONSortedIsTheStreamSorted: sorted, ls --json renders its lines from the records
// it kept; they are the streamed lines, byte for byte, in key order. (Keys without expiry and
// values without a time: nothing in a line moves between the two runs.)
func TestCLIListJSONSortedIsTheStreamSorted(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	ctx := context.Background()
	for i, v := range []string{"opaque", "é \x00 \"q\" \\", "ctl:\x1b[31m", strings.Repeat("v", 300)} {
		for _, key := range []string{fmt.Sprintf("lock:%d", 9-i), fmt.Sprintf("lock:%c", 'z'-i), fmt.Sprintf("lock:x%d", i)} {
			if err := c.Set(ctx, key, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Set(ctx, protocol.FenceKey("lock:9"), 42, 0).Err(); err != nil {
		t.Fatal(err)
	}
	url := redisURL(s.Addr)
	streamed := runCLI(t, cliOpts{}, "ls", "--json", "--redis", url)
	expectExit(t, streamed, exitOK)
	want := strings.SplitAfter(streamed.stdout, "\n")
	want = want[:len(want)-1]
	slices.SortFunc(want, func(a, b string) int { return strings.Compare(jsonKey(t, a), jsonKey(t, b)) })
	sorted := runCLI(t, cliOpts{}, "ls", "--json", "--sort", "key", "--redis", url)
	expectExit(t, sorted, exitOK)
	if got := sorted.stdout; got != strings.Join(want, "") || len(want) != 12 {
		t.Errorf("sorted:\n%s\nwant the %d streamed lines in key order:\n%s", got, len(want), strings.Join(want, ""))
	}
}

func jsonKey(t *testing.T, line string) string {
	var obj struct{ Key string }
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Key
}
