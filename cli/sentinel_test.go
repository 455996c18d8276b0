package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Every command works through Sentinel, in both forms (--sentinel-master with the sentinels'
// URLs, one redis+sentinel:// URL): ls, show, extend, release, audit and the demo, and ls
// after SENTINEL FAILOVER reads the promoted master, which ls names as the locks' server.
func TestCLIThroughSentinel(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 1)
	c := r.Client()
	seedLocks(t, c)
	flagForm := []string{"--redis", redisURL(r.SentinelAddrs[0]), "--sentinel-master", redistest.MasterName}
	urlForm := []string{"--redis", "redis+sentinel://" + r.SentinelAddrs[0] + "/" + redistest.MasterName}
	master := r.Nodes[0].Addr
	keys := func(form []string) []string {
		t.Helper()
		res := runCLI(t, cliOpts{}, append([]string{"ls", "--json"}, form...)...)
		expectExit(t, res, exitOK)
		var out []string
		for _, obj := range jsonLines(t, res.stdout) {
			out = append(out, obj["key"].(string))
			// The server of a lock is the master, not the sentinel that named it.
			if in := obj["instances"].([]any); len(in) != 1 || in[0].(map[string]any)["addr"] != master {
				t.Errorf("%s: instances %v, want the master %s", obj["key"], in, master)
			}
		}
		slices.Sort(out)
		return out
	}
	want := "[lock:binary lock:forever lock:list lock:old lock:redisson]"
	if got := fmt.Sprint(keys(flagForm)); got != want {
		t.Fatalf("ls through the sentinels: %s, want %s", got, want)
	}
	res := runCLI(t, cliOpts{}, append([]string{"show", "lock:old"}, urlForm...)...)
	expectExit(t, res, exitOK)
	if !strings.Contains(res.stdout, oldLock) {
		t.Errorf("show does not print the lock's value:\n%s", res)
	}
	res = runCLI(t, cliOpts{}, append([]string{"extend", "lock:old", "--ttl", "2h", "--expect", oldLock}, flagForm...)...)
	expectExit(t, res, exitOK)

	if err := r.WaitSynced(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	old := r.Nodes[0]
	promoted, err := r.Failover(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if promoted == old {
		t.Fatal("the master did not change")
	}
	master = promoted.Addr
	if got := fmt.Sprint(keys(urlForm)); got != want {
		t.Fatalf("ls after the failover: %s, want %s", got, want)
	}
	ctx := context.Background()
	if ttl := promoted.Client().PTTL(ctx, "lock:old").Val(); ttl < 119*time.Minute {
		t.Errorf("the promoted master has lock:old with TTL %v: the extend did not reach it", ttl)
	}
	res = runCLI(t, cliOpts{}, append([]string{"release", "lock:old", "--expect", oldLock}, flagForm...)...)
	expectExit(t, res, exitOK)
	if n := promoted.Client().Exists(ctx, "lock:old").Val(); n != 0 {
		t.Error("release after the failover did not delete lock:old on the new master")
	}
	// The trail has the extend from before the failover (replicated) and the release after it.
	res = runCLI(t, cliOpts{}, append([]string{"audit"}, urlForm...)...)
	expectExit(t, res, exitOK)
	if strings.Count(res.stdout, "lock:old") != 2 {
		t.Errorf("audit through the sentinels does not list the extend and the release of lock:old:\n%s", res)
	}

	res = runCLI(t, cliOpts{}, append([]string{"demo", "--headless", "--duration", "1500ms", "--ttl", "1s", "--json"}, flagForm...)...)
	expectExit(t, res, exitOK)
	sum := jsonLines(t, compactJSON(t, res.stdout))[0]
	label := "sentinel " + redistest.MasterName + " → " + promoted.Addr + " (sentinels " + r.SentinelAddrs[0] + ")"
	if sum["server"] != label || sum["sections"].(float64) < 1 || sum["overlaps"].(float64) != 0 {
		t.Errorf("demo through the sentinels: %v, want server %q", sum, label)
	}
	if left := promoted.Client().Keys(ctx, "*lock:demo:*").Val(); len(left) != 0 {
		t.Errorf("the demo left %v on the master", left)
	}
}

// Each way a Sentinel connection fails is one line with its documented exit code, without
// the password; the sentinels' own user and password come from --sentinel-user and
// $LOCKSCOPE_SENTINEL_PASSWORD, or from a context's sentinel_user and sentinel_password_env.
func TestCLISentinelErrors(t *testing.T) {
	r := redistest.StartReplicated(t, 0, 1)
	sentinel, master := r.SentinelAddrs[0], r.Nodes[0].Addr
	r.Sentinels[0].SetUser("watcher", "on", ">spw-right", "+@all", "&*")
	r.Nodes[0].SetUser("app", "on", ">mpw-right", "~*", "&*", "+@all")
	free, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	name := redistest.MasterName
	cases := []struct {
		what string
		env  []string
		args []string
		code int
		says string
	}{
		{"sentinels unreachable", nil, []string{"--redis", fmt.Sprintf("redis://127.0.0.1:%d", free), "--sentinel-master", name},
			exitUnreachable, "no sentinel answers"},
		{"unknown master name", nil, []string{"--redis", redisURL(sentinel), "--sentinel-master", "nosuch"},
			exitUsage, `monitors no master named "nosuch"`},
		{"not a sentinel", nil, []string{"--redis", redisURL(master), "--sentinel-master", name},
			exitUsage, master + " is not a sentinel"},
		{"wrong sentinel password", []string{envSentinelPassword + "=spw-wrong"},
			[]string{"--redis", redisURL(sentinel), "--sentinel-master", name, "--sentinel-user", "watcher"},
			exitAuth, "authentication failed at sentinel"},
		{"wrong master password", []string{envPassword + "=mpw-wrong"},
			[]string{"--redis", "redis://app@" + sentinel, "--sentinel-master", name},
			exitAuth, "authentication failed at the master " + master},
		{"with --cluster", nil, []string{"--redis", redisURL(sentinel), "--sentinel-master", name, "--cluster"},
			exitUsage, "--cluster and --sentinel-master"},
		{"with --redlock", nil, []string{"--redis", redisURL(sentinel), "--sentinel-master", name, "--redlock"},
			exitUsage, "--redlock and --sentinel-master"},
		{"a sentinel URL with --independent", nil, []string{"--redis", "redis+sentinel://" + sentinel + "/" + name, "--independent"},
			exitUsage, "with --independent"},
	}
	for _, c := range cases {
		res := runCLI(t, cliOpts{env: c.env}, append([]string{"ls"}, c.args...)...)
		if res.code != c.code || !strings.Contains(res.stderr, c.says) || strings.Count(res.stderr, "\n") != 1 ||
			strings.Contains(res.stderr, "-wrong") {
			t.Errorf("%s: want exit %d, one line saying %q:\n%s", c.what, c.code, c.says, res)
		}
	}
	res := runCLI(t, cliOpts{}, "demo", "--headless", "--redlock", "3", "--redis", redisURL(sentinel), "--sentinel-master", name)
	expectExit(t, res, exitUsage)

	// The right credentials, from the environment and from a context.
	env := []string{envSentinelPassword + "=spw-right", envPassword + "=mpw-right"}
	res = runCLI(t, cliOpts{env: env}, "ls", "--redis", "redis://app@"+sentinel, "--sentinel-master", name, "--sentinel-user", "watcher")
	expectExit(t, res, exitOK)
	xdg := writeConfig(t, "contexts:\n  orders:\n    redis: [redis://app@"+sentinel+"]\n    sentinel_master: "+name+
		"\n    sentinel_user: watcher\n    sentinel_password_env: ORDERS_SENTINEL_PW\n    password_env: ORDERS_PW\n")
	res = runCLI(t, cliOpts{env: []string{xdg, "ORDERS_SENTINEL_PW=spw-right", "ORDERS_PW=mpw-right"}}, "ls", "--context", "orders")
	expectExit(t, res, exitOK)
	res = runCLI(t, cliOpts{env: []string{xdg, "ORDERS_SENTINEL_PW=spw-wrong", "ORDERS_PW=mpw-right"}}, "ls", "--context", "orders")
	expectExit(t, res, exitAuth)
	res = runCLI(t, cliOpts{env: []string{xdg}}, "contexts")
	expectExit(t, res, exitOK)
	if !strings.Contains(res.stdout, "orders  sentinel") {
		t.Errorf("contexts does not list the sentinel mode:\n%s", res)
	}
}

// sentinelACLUser is the sentinels' user of docs/acl.md.
const sentinelACLUser = "lockscope-sentinel"

// sentinelACLRule is docs/acl.md's ACL SETUSER line for the sentinels, with the test's password.
func sentinelACLRule(t testing.TB) []any {
	t.Helper()
	doc, err := os.ReadFile("../docs/acl.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(doc)) {
		if strings.HasPrefix(line, "ACL SETUSER "+sentinelACLUser+" ") {
			var cmd []any
			for _, word := range strings.Fields(strings.ReplaceAll(line, ">CHANGE-ME", ">"+aclPassword)) {
				cmd = append(cmd, word)
			}
			return cmd
		}
	}
	t.Fatalf("docs/acl.md has no ACL SETUSER line for %s", sentinelACLUser)
	return nil
}

// The sentinels' user of docs/acl.md is enough: ls connects through it, and FollowMaster's
// subscription to +switch-master is accepted (the sentinel lists it subscribed); the default
// user is turned off, so nothing else can be what works.
func TestSentinelACLRule(t *testing.T) {
	r := redistest.StartReplicated(t, 0, 1)
	ctx := context.Background()
	sentinel := r.Sentinels[0].Client()
	if err := sentinel.Do(ctx, sentinelACLRule(t)...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := sentinel.Do(ctx, "ACL", "SETUSER", "admin", "on", ">admin-pw", "+@all", "&*").Err(); err != nil {
		t.Fatal(err)
	}
	if err := sentinel.Do(ctx, "ACL", "SETUSER", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	args := []string{"ls", "--redis", redisURL(r.SentinelAddrs[0]), "--sentinel-master", redistest.MasterName, "--sentinel-user", sentinelACLUser}
	res := runCLI(t, cliOpts{env: []string{envSentinelPassword + "=" + aclPassword}}, args...)
	expectExit(t, res, exitOK)
	res = runCLI(t, cliOpts{}, args...) // without the password: the default user is off
	expectExit(t, res, exitAuth)

	target, _, err := connect.Open(ctx, connect.Config{URLs: []string{redisURL(r.SentinelAddrs[0])}, SentinelMaster: redistest.MasterName,
		SentinelUser: sentinelACLUser, SentinelPassword: aclPassword})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	target.FollowMaster(fctx)
	admin := redis.NewClient(&redis.Options{Addr: r.SentinelAddrs[0], Username: "admin", Password: "admin-pw"})
	defer admin.Close()
	// FollowMaster's subscription (one channel), and go-redis' failover client's own (two:
	// +switch-master and +replica-reconf-done, refused as a whole without the second).
	redistest.Eventually(t, "FollowMaster and the failover client subscribed as "+sentinelACLUser, func() bool {
		list, err := admin.ClientList(ctx).Result()
		if err != nil {
			return false
		}
		ours, theirs := false, false
		for line := range strings.Lines(list) {
			if strings.Contains(line, " user="+sentinelACLUser+" ") {
				ours = ours || strings.Contains(line, " sub=1 ")
				theirs = theirs || strings.Contains(line, " sub=2 ")
			}
		}
		return ours && theirs
	})
}

// The console through Sentinel, end to end in a terminal: the status bar names the master
// the sentinels follow, and after SENTINEL FAILOVER names the promoted one, within a second
// of the promotion as the screen shows it (tmux polled every 50 ms), without losing the table.
func TestTUIThroughSentinel(t *testing.T) {
	redistest.Slow(t)
	r := redistest.StartReplicated(t, 1, 1)
	setLock(t, r.Nodes[0], "lock:e2e:sentinel", "sentinel-node", "-", 5*time.Minute)
	if err := r.WaitSynced(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s := startTUI(t, "--redis", redisURL(r.SentinelAddrs[0]), "--sentinel-master", redistest.MasterName)
	s.waitFor("the lock and the master", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "lock:e2e:sentinel") && strings.Contains(scr, "sentinel "+redistest.MasterName+" → "+r.Nodes[0].Addr)
	})
	promoted, err := r.Failover(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	scr := s.waitFor("the promoted master in the status bar", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "→ "+promoted.Addr)
	})
	took := time.Since(promotedAt)
	t.Logf("the status bar named the promoted master %v after a quorum of sentinels did", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("the console took %v to show the failover, want within a second", took)
	}
	if !strings.Contains(scr, "lock:e2e:sentinel") {
		t.Errorf("the lock left the table at the failover:\n%s", scr)
	}
	s.quit()
}
