package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestCLIIndependentServers: two standalone servers hold the same key with different
// holders. Several --redis URLs must say what they are; with --independent, ls lists the key
// once per server (SERVER column, the address in JSON), show shows both, and release is aimed
// at one server (--server when the key is on several) and leaves the other's lock alone.
func TestCLIIndependentServers(t *testing.T) {
	srvs := redistest.StartN(t, 2)
	a, b := srvs[0], srvs[1]
	setLock(t, a, "lock:same", "node-a", "-", time.Hour)
	setLock(t, b, "lock:same", "node-b", "-", time.Hour)
	setLock(t, b, "lock:only-b", "node-b2", "-", time.Hour)
	urls := []string{"--redis", redisURL(a.Addr), "--redis", redisURL(b.Addr)}
	run := func(args ...string) cliRun { return runCLI(t, cliOpts{}, append(args, urls...)...) }

	r := run("ls")
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "--redlock") || !strings.Contains(r.stderr, "--independent") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("several URLs without a mode: want one line naming --redlock and --independent:\n%s", r)
	}
	expectExit(t, run("ls", "--redlock", "--independent"), exitUsage)
	expectExit(t, run("show", "lock:same", "--redlock", "--server", a.Addr), exitUsage)

	r = run("ls", "--independent")
	expectExit(t, r, exitOK)
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "SERVER") {
		t.Fatalf("no SERVER column:\n%s", r.stdout)
	}
	for _, want := range []string{a.Addr + " +lock:same +node-a", b.Addr + " +lock:same +node-b ", b.Addr + " +lock:only-b +node-b2"} {
		if !containsLine(lines, want) {
			t.Errorf("ls --independent: no row %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "3 locks") {
		t.Errorf("ls --independent: not 3 locks:\n%s", r.stdout)
	}

	r = run("ls", "--json", "--independent")
	expectExit(t, r, exitOK)
	holders := map[string]string{}
	for _, o := range jsonLines(t, r.stdout) {
		in := o["instances"].([]any)
		holders[o["key"].(string)+"@"+in[0].(map[string]any)["addr"].(string)] = o["node"].(string)
	}
	if len(holders) != 3 || holders["lock:same@"+a.Addr] != "node-a" || holders["lock:same@"+b.Addr] != "node-b" {
		t.Fatalf("ls --json --independent: %v", holders)
	}

	r = run("show", "lock:same", "--independent")
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "node-a") || !strings.Contains(r.stdout, "node-b") {
		t.Fatalf("show: both servers' locks wanted:\n%s", r.stdout)
	}
	r = run("show", "lock:same", "--independent", "--server", b.Addr)
	expectExit(t, r, exitOK)
	if strings.Contains(r.stdout, "node-a") || !strings.Contains(r.stdout, "node-b") {
		t.Fatalf("show --server: only b's lock wanted:\n%s", r.stdout)
	}
	expectExit(t, run("show", "lock:same", "--independent", "--server", "127.0.0.1:1"), exitUsage)

	r = run("release", "lock:same", "--independent", "--yes")
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "--server") || !strings.Contains(r.stderr, a.Addr) {
		t.Fatalf("release of a key on two servers: want a hint naming --server and the servers:\n%s", r)
	}
	expectExit(t, run("release", "lock:same", "--independent", "--yes", "--server", a.Addr), exitOK)
	ctx := context.Background()
	if n := a.Client().Exists(ctx, "lock:same").Val(); n != 0 {
		t.Errorf("a's lock:same not released")
	}
	if v := b.Client().Get(ctx, "lock:same").Val(); !strings.HasPrefix(v, "node-b:") {
		t.Errorf("b's lock:same touched: %q", v)
	}
	// Now on one server only: no --server needed.
	expectExit(t, run("extend", "lock:same", "--independent", "--yes", "--ttl", "2h"), exitOK)
	if ttl := b.Client().TTL(ctx, "lock:same").Val(); ttl < 90*time.Minute {
		t.Errorf("b's lock:same not extended: ttl %v", ttl)
	}
	expectExit(t, run("release", "lock:only-b", "--independent", "--yes"), exitOK)
	expectExit(t, run("release", "lock:only-b", "--independent", "--yes"), exitGone)

	// A list under the key on one server does not hide the other server's lock.
	if err := a.Client().RPush(ctx, "lock:mixed", "x").Err(); err != nil {
		t.Fatal(err)
	}
	setLock(t, b, "lock:mixed", "node-mixed", "-", time.Hour)
	r = run("show", "lock:mixed", "--independent")
	expectExit(t, r, exitOther)
	if !strings.Contains(r.stdout, "node-mixed") || !strings.Contains(r.stderr, "not a lock") {
		t.Errorf("show of a list on a and a lock on b: want b's lock shown and the list named:\n%s", r)
	}
}

// containsLine reports whether a line of lines starts with want's words, where " +" stands
// for the padding between two columns.
func containsLine(lines []string, want string) bool {
	words := strings.Split(want, " +")
	for i := range words {
		words[i] = regexp.QuoteMeta(words[i])
	}
	re := regexp.MustCompile("^" + strings.Join(words, " +"))
	return slices.ContainsFunc(lines, re.MatchString)
}

// TestTUIIndependentServers: the console over two independent servers holding the same key
// lists it twice, one row per server under SERVER, and a release from the row of one server leaves the other server's lock alone.
func TestTUIIndependentServers(t *testing.T) {
	redistest.Slow(t)
	srvs := redistest.StartN(t, 2)
	a, b := srvs[0], srvs[1]
	setLock(t, a, "lock:same", "node-a", "-", time.Hour)
	setLock(t, b, "lock:same", "node-b", "-", time.Hour)

	s := startTUI(t, "--redis", redisURL(a.Addr), "--redis", redisURL(b.Addr), "--independent")
	rowA := regexp.MustCompile(regexp.QuoteMeta(a.Addr) + ` +lock:same +node-a`)
	rowB := regexp.MustCompile(regexp.QuoteMeta(b.Addr) + ` +lock:same +node-b`)
	s.waitFor("a row per server", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "SERVER") && rowA.MatchString(scr) && rowB.MatchString(scr) && strings.Contains(scr, "2 locks")
	})

	s.keys("/")
	s.typeText("node-b")
	s.keys("Enter")
	s.waitFor("b's row alone", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "1/2 locks") && rowB.MatchString(scr) && !rowA.MatchString(scr)
	})
	s.keys("d")
	s.waitForText("Type its key to confirm", 5*time.Second)
	s.typeConfirmation("lock:same")
	s.keys("Tab", "Enter")
	s.waitForText("released lock:same", 10*time.Second)
	ctx := context.Background()
	if n := b.Client().Exists(ctx, "lock:same").Val(); n != 0 {
		t.Errorf("b's lock:same still there after its release")
	}
	if v := a.Client().Get(ctx, "lock:same").Val(); !strings.HasPrefix(v, "node-a:") {
		t.Errorf("the release from b's row touched a's lock: %q", v)
	}
	s.keys("Escape")
	s.waitFor("a's row stays", 10*time.Second, func(scr string) bool {
		return rowA.MatchString(scr) && !rowB.MatchString(scr) && strings.Contains(scr, "1 lock")
	})
	s.quit()
}

// TestCLIIndependentActionWithAServerDown: of independent servers, one does not answer. A
// release or extend without --server cannot know whether the key is (also) on it, so it is
// refused rather than aimed at the one server that answered, or told "already gone" (exit 5)
// about a lock the other may hold; --server still acts on the server named.
func TestCLIIndependentActionWithAServerDown(t *testing.T) {
	a := redistest.Start(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := fmt.Sprintf("127.0.0.1:%d", port)
	setLock(t, a, "lock:here", "node-a", "-", time.Hour)
	urls := []string{"--independent", "--redis", redisURL(a.Addr), "--redis", redisURL(down)}
	run := func(args ...string) cliRun { return runCLI(t, cliOpts{}, append(args, urls...)...) }

	for _, key := range []string{"lock:here", "lock:nowhere"} {
		r := run("release", key, "--yes")
		expectExit(t, r, exitUnreachable)
		if !strings.Contains(r.stderr, down) || !strings.Contains(r.stderr, "--server") {
			t.Errorf("release %s with %s down: want a refusal naming it and --server:\n%s", key, down, r)
		}
	}
	if n := a.Client().Exists(context.Background(), "lock:here").Val(); n != 1 {
		t.Fatalf("lock:here released although the other server could not be read")
	}
	expectExit(t, run("release", "lock:here", "--yes", "--server", a.Addr), exitOK)

	// show: not on the server that answered is not "does not exist" without naming the other.
	r := run("show", "lock:nowhere")
	expectExit(t, r, exitGone)
	if !strings.Contains(r.stderr, "does not exist on the servers that answered; could not read "+down) {
		t.Errorf("show of a key on no server that answered: want the unread server named:\n%s", r)
	}
}
