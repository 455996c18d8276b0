package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// redlockFlags starts n servers and returns their clients and the --redis flags naming them.
func redlockFlags(t *testing.T, n int) ([]*redistest.Server, []*redis.Client, []string) {
	t.Helper()
	servers := redistest.StartN(t, n)
	var clients []*redis.Client
	var flags []string
	for _, s := range servers {
		clients = append(clients, s.Client())
		flags = append(flags, "--redis", redisURL(s.Addr))
	}
	if n > 1 {
		flags = append(flags, "--redlock")
	}
	return servers, clients, flags
}

func TestCLIRedlock(t *testing.T) {
	servers, clients, flags := redlockFlags(t, 3)
	const newer = "api-9:req-2:1700000000500:00000000000000aa"
	for i, c := range clients {
		v := oldLock
		if i == 2 {
			v = newer
		}
		if err := c.Set(t.Context(), "lock:q", v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}

	r := runCLI(t, cliOpts{}, append([]string{"ls", "--json"}, flags...)...)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 1 {
		t.Fatalf("%d locks, want 1 merged record:\n%s", len(objs), r)
	}
	checkFields(t, "redlock ls", objs[0], lsFields)
	insts := objs[0]["instances"].([]any)
	if len(insts) != 3 || objs[0]["value"] != oldLock {
		t.Fatalf("instances %v value %v", insts, objs[0]["value"])
	}
	for i, in := range insts {
		m := in.(map[string]any)
		checkFields(t, "redlock instance", m, instanceFields)
		if m["addr"] != servers[i].Addr {
			t.Errorf("instance %d addr %v, want %s", i, m["addr"], servers[i].Addr)
		}
	}
	if insts[2].(map[string]any)["value"] != newer {
		t.Errorf("instance 3 value %v, want the newer holder", insts[2])
	}
	r = runCLI(t, cliOpts{}, append([]string{"ls"}, flags...)...)
	if !strings.Contains(r.stdout, "quorum 2/3") {
		t.Errorf("no quorum column:\n%s", r.stdout)
	}

	// Release acts on every instance and prints a line per instance.
	r = runCLI(t, cliOpts{}, append([]string{"release", "lock:q", "--expect", oldLock}, flags...)...)
	expectExit(t, r, exitOK)
	for i, want := range []string{"released", "released", "value differs"} {
		if !strings.Contains(r.stdout, servers[i].Addr+"  "+want) {
			t.Errorf("no line %q for instance %d:\n%s", want, i, r)
		}
	}
	if v, ok := redistest.Value(t, clients[2], "lock:q"); !ok || v != newer {
		t.Fatal("the newer holder's copy was deleted")
	}
	for _, c := range clients[:2] {
		if _, ok := redistest.Value(t, c, "lock:q"); ok {
			t.Fatal("a matching copy survived")
		}
	}
	// Only the newer holder is left: the same release now changed hands.
	r = runCLI(t, cliOpts{}, append([]string{"release", "lock:q", "--expect", oldLock}, flags...)...)
	expectExit(t, r, exitChanged)

	// With one instance down: the others still act, the dead one is named, exit code partial.
	servers[1].Kill()
	r = runCLI(t, cliOpts{}, append([]string{"extend", "lock:q", "--ttl", "1h", "--expect", newer}, flags...)...)
	expectExit(t, r, exitPartial)
	if !strings.Contains(r.stdout, servers[1].Addr+"  failed: cannot reach Redis") || !strings.Contains(r.stdout, servers[2].Addr+"  extended") {
		t.Errorf("per-instance lines:\n%s", r)
	}
	if !strings.Contains(r.stderr, "audit record was not written") {
		t.Errorf("no warning about the audit write on the dead instance:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, append([]string{"ls", "--json"}, flags...)...)
	expectExit(t, r, exitPartial)
	if !strings.Contains(r.stderr, servers[1].Addr) {
		t.Errorf("partial census does not name the dead instance:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, append([]string{"audit", "--json"}, flags...)...)
	expectExit(t, r, exitPartial)
	if n := len(jsonLines(t, r.stdout)); n != 3 {
		t.Errorf("audit records %d, want 3 merged across instances:\n%s", n, r)
	}
}
