package cli

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// aclPassword replaces the placeholder password of docs/acl.md's rules.
const aclPassword = "acl-test-pw"

// aclRules are the ACL SETUSER lines of docs/acl.md, as commands, with the test's password:
// those of every server, those a cluster's nodes add, and those for Redisson's locks.
func aclRules(t testing.TB) (server, cluster, redissonExtra [][]any) {
	t.Helper()
	doc, err := os.ReadFile("../docs/acl.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "ACL SETUSER ") {
			continue
		}
		var cmd []any
		for _, word := range strings.Fields(strings.ReplaceAll(line, ">CHANGE-ME", ">"+aclPassword)) {
			cmd = append(cmd, word)
		}
		switch {
		case strings.Contains(line, sentinelACLUser):
			continue // a sentinel's, not a data node's: sentinelACLRule
		case strings.Contains(line, "redisson_"):
			redissonExtra = append(redissonExtra, cmd)
		case strings.Contains(line, "+cluster|slots"):
			cluster = append(cluster, cmd)
		default:
			server = append(server, cmd)
		}
	}
	if len(server) != 2 || len(cluster) != 2 || len(redissonExtra) != 2 {
		t.Fatalf("docs/acl.md has %d server, %d cluster and %d Redisson rules, want 2 of each", len(server), len(cluster), len(redissonExtra))
	}
	return server, cluster, redissonExtra
}

// applyACLRules creates the documented users on each node, with the Redisson additions (the
// cluster additions too when cluster is set).
func applyACLRules(t testing.TB, nodes []*redistest.Server, cluster bool) {
	t.Helper()
	server, clusterExtra, redissonExtra := aclRules(t)
	rules := append(server, redissonExtra...)
	if cluster {
		rules = append(rules, clusterExtra...)
	}
	for _, n := range nodes {
		for _, rule := range rules {
			if err := n.Client().Do(context.Background(), rule...).Err(); err != nil {
				t.Fatalf("%v on %s: %v", rule, n.Addr, err)
			}
		}
	}
}

// roleURL is the URL of addr as one of the documented users.
func roleURL(user, addr string) string {
	return "redis://" + url.UserPassword(user, aclPassword).String() + "@" + addr
}

// checkACLRoles runs the documented roles against a deployment holding lockKeys (string
// locks worth oldLock, an hour to live) and lock:redisson: the inspector reads everything and
// is refused every change with exit 8 and one line naming the command; the operator releases
// and extends, and its actions are audited. extra are the flags that name the deployment
// besides --redis (e.g. --cluster); admin reads the keys back.
func checkACLRoles(t *testing.T, addr string, admin redis.UniversalClient, lockKeys []string, extra ...string) {
	t.Helper()
	ctx := context.Background()
	as := func(user string, args ...string) cliRun {
		t.Helper()
		return runCLI(t, cliOpts{}, append(append(args, "--redis", roleURL(user, addr)), extra...)...)
	}
	const inspector, operator = "lockscope-inspector", "lockscope-operator"

	for _, role := range []string{inspector, operator} {
		r := as(role, "ls", "--json")
		expectExit(t, r, exitOK)
		if n := len(jsonLines(t, r.stdout)); n != len(lockKeys)+1 || strings.Contains(r.stderr, "warning") {
			t.Fatalf("%s's census: %d locks (want %d), warnings:\n%s", role, n, len(lockKeys)+1, r)
		}
		for _, key := range append([]string{"lock:redisson"}, lockKeys...) {
			expectExit(t, as(role, "show", key), exitOK)
		}
		r = as(role, "show", "--json", lockKeys[0])
		if obj := jsonLines(t, r.stdout); len(obj) != 1 || obj[0]["waiters"] != 1.0 || strings.Contains(r.stderr, "warning") {
			t.Fatalf("%s's show of a lock with a waiter:\n%s", role, r)
		}
		r = as(role, "show", "--json", "lock:redisson") // its RFencedLock token is its fence
		if obj := jsonLines(t, r.stdout); len(obj) != 1 || obj[0]["fence"] != 7.0 {
			t.Fatalf("%s's show of a fenced Redisson lock:\n%s", role, r)
		}
		expectExit(t, as(role, "audit"), exitOK)
	}
	refusals := []struct {
		args []string
		says string
	}{
		{[]string{"release", lockKeys[0], "--expect", oldLock}, "may not run EVALSHA"},
		{[]string{"extend", lockKeys[0], "--ttl", "2h", "--expect", oldLock}, "may not run EVALSHA"},
		{[]string{"release", lockKeys[0], "--yes"}, "may not run "}, // GET, or on a cluster EVALSHA
	}
	for _, refused := range refusals {
		r := as(inspector, refused.args...)
		expectExit(t, r, exitPermission)
		// One error line; the holder shown for confirmation, notes and a warning that the
		// refusal could not be audited may precede it.
		var errs []string
		for line := range strings.Lines(r.stderr) {
			if strings.HasPrefix(line, "lockscope: ") && !strings.HasPrefix(line, "lockscope: warning: ") &&
				!strings.HasPrefix(line, "lockscope: note: ") {
				errs = append(errs, line)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0], refused.says) {
			t.Errorf("%v: want one error line saying %q:\n%s", refused.args, refused.says, r)
		}
	}
	if v, _ := admin.Get(ctx, lockKeys[0]).Result(); v != oldLock {
		t.Fatalf("the inspector changed %s: %q", lockKeys[0], v)
	}

	// The release wakes the waiter queued on the first lock and the Redlock waiters.
	sub := admin.Subscribe(ctx, protocol.WakeChannelPrefix+"c1", protocol.RedlockReleasedChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range lockKeys {
		for _, args := range [][]string{
			{"extend", key, "--ttl", "2h", "--expect", oldLock},
			{"release", key, "--yes"},
		} {
			r := as(operator, args...)
			expectExit(t, r, exitOK)
			if strings.Contains(r.stderr, "audit") {
				t.Errorf("the operator's %v was not audited:\n%s", args, r)
			}
		}
	}
	heard := map[string]bool{}
	for len(heard) < 2 {
		msg, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatalf("the operator's release woke only %v: %v", heard, err)
		}
		if m, ok := msg.(*redis.Message); ok {
			heard[m.Channel] = true
		}
	}
	// Releasing the Redisson lock tells its waiters on Redisson's channel, as its unlock does.
	redissonSub := admin.Subscribe(ctx, "redisson_lock__channel:{lock:redisson}")
	defer redissonSub.Close()
	if _, err := redissonSub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	expectExit(t, as(operator, "release", "lock:redisson", "--yes"), exitOK)
	if msg, err := redissonSub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
		t.Fatalf("the operator's release of a Redisson lock told its waiters %v, %v", msg, err)
	}
	if n := admin.Exists(ctx, append(lockKeys, "lock:redisson")...).Val(); n != 0 {
		t.Fatalf("%d keys left after the operator released them all", n)
	}
	r := as(inspector, "audit", "--json")
	expectExit(t, r, exitOK)
	if n := len(jsonLines(t, r.stdout)); n < 2*len(lockKeys)+1 {
		t.Fatalf("the inspector reads %d audit records, want at least %d:\n%s", n, 2*len(lockKeys)+1, r)
	}
}

// seedACLLocks writes string locks worth oldLock under keys and a Redisson hash lock.
func seedACLLocks(t *testing.T, c redis.Cmdable, keys []string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		if err := c.Set(ctx, k, oldLock, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.HSet(ctx, "lock:redisson", redisson, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "redisson_lock_token:{lock:redisson}", "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A live locklib waiter of client c1 on the first lock.
	entry := protocol.QueueEntry("c1:w1", time.Minute, "c1-node:-:0:00")
	if err := c.ZAdd(ctx, protocol.WaitQueueKey(keys[0]), redis.Z{Score: 1, Member: entry}).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := float64(time.Now().Add(time.Hour).UnixMilli())
	if err := c.ZAdd(ctx, protocol.WaitPresenceKey(keys[0]), redis.Z{Score: deadline, Member: entry}).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestACLRolesStandalone(t *testing.T) {
	s := redistest.Start(t)
	applyACLRules(t, []*redistest.Server{s}, false)
	keys := []string{"lock:acl:1", "lock:acl:2"}
	seedACLLocks(t, s.Client(), keys)
	checkNoACLDenials(t, s, keys[0])
	checkACLRoles(t, s.Addr, s.Client(), keys)
}

// checkNoACLDenials runs each role's reads (ls, show) and checks that the server logged no
// refusal: a command the documented rules leave out fails quietly where lockscope falls back
// (TIME: ages on the local clock), and fills the ACL LOG that operators watch for intrusions.
func checkNoACLDenials(t *testing.T, s *redistest.Server, key string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Client().Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"lockscope-inspector", "lockscope-operator"} {
		expectExit(t, runCLI(t, cliOpts{}, "ls", "--redis", roleURL(role, s.Addr)), exitOK)
		expectExit(t, runCLI(t, cliOpts{}, "show", key, "--redis", roleURL(role, s.Addr)), exitOK)
	}
	if denied := s.Client().Do(ctx, "ACL", "LOG").Val(); denied != nil && len(denied.([]any)) > 0 {
		t.Errorf("the documented roles were refused commands:\n%v", denied)
	}
}

// The console runs as the inspector: it follows changes and hears locklib's events; an
// inspector who may not use CLIENT TRACKING or CONFIG GET still gets the census, from re-scans.
func TestACLInspectorConsole(t *testing.T) {
	redistest.Slow(t)
	s := redistest.Start(t)
	applyACLRules(t, []*redistest.Server{s}, false)
	ctx := context.Background()
	bare := "lockscope-inspector-bare"
	server, _, _ := aclRules(t)
	rule := append([]any{"ACL", "SETUSER", bare}, server[0][3:]...)
	if err := s.Client().Do(ctx, append(rule, "-client|tracking", "-config|get")...).Err(); err != nil {
		t.Fatal(err)
	}
	setLock(t, s, "lock:acl:console", "acl-node", "-", time.Hour)

	sess := startTUI(t, "--redis", roleURL("lockscope-inspector", s.Addr))
	sess.waitForText("acl-node", 15*time.Second)
	sess.waitForText("following tracking", 10*time.Second)
	ev, _ := json.Marshal(protocol.Event{Type: string(locklib.EventRenewFailed), Key: "lock:acl:console", Node: "acl-node",
		Reason: "acl-probe", AtMs: time.Now().UnixMilli()})
	sess.waitFor("locklib's event", 10*time.Second, func(scr string) bool {
		_ = s.Client().Publish(ctx, protocol.EventsChannel, ev).Err() // until the console has subscribed
		return strings.Contains(scr, "reason=acl-probe")
	})
	sess.quit()

	// Where the server sends keyspace notifications, the inspector follows them.
	if err := s.Client().ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	sess = startTUI(t, "--redis", roleURL("lockscope-inspector", s.Addr))
	sess.waitForText("acl-node", 15*time.Second)
	sess.waitForText("following notifications", 10*time.Second)
	sess.quit()

	sess = startTUI(t, "--redis", roleURL(bare, s.Addr))
	sess.waitForText("acl-node", 15*time.Second)
	sess.waitForText("CLIENT TRACKING refused", 10*time.Second) // a warning in the event log, not a failure
	setLock(t, s, "lock:acl:later", "later-node", "-", time.Hour)
	sess.waitForText("later-node", 20*time.Second)
	sess.quit()
}
