package connect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The Sentinel URL forms: the sentinels, the master's name, the master's credentials in the
// userinfo and the sentinels' in the query, a default port; and the combinations refused.
func TestSentinelURLForms(t *testing.T) {
	cfg := Config{URLs: []string{"redis+sentinel://app:mpw@h1:1,h2/orders/3?sentinel_username=sen&sentinel_password=spw"}}
	fo, err := sentinelOptions(cfg, nil, secretsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %v %s/%s db%d sentinel %s/%s tls=%v", fo.MasterName, fo.SentinelAddrs, fo.Username, fo.Password,
		fo.DB, fo.SentinelUsername, fo.SentinelPassword, fo.TLSConfig != nil)
	if want := "orders [h1:1 h2:26379] app/mpw db3 sentinel sen/spw tls=false"; got != want {
		t.Errorf("redis+sentinel:// gives %q, want %q", got, want)
	}
	// --sentinel-master with redis:// URLs naming the sentinels; passwords from the environment.
	cfg = Config{SentinelMaster: "orders", URLs: []string{"rediss://h1:1", "rediss://h1:2"}, Password: "mpw",
		SentinelUser: "sen", SentinelPassword: "spw"}
	if fo, err = sentinelOptions(cfg, nil, secretsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	if fo.MasterName != "orders" || len(fo.SentinelAddrs) != 2 || fo.Password != "mpw" || fo.SentinelPassword != "spw" ||
		fo.TLSConfig == nil || fo.TLSConfig.ServerName != "" {
		t.Errorf("--sentinel-master with rediss:// URLs: %+v", fo)
	}
	if !wantsSentinel(Config{URLs: []string{"rediss+sentinel://h/m"}}) || wantsSentinel(Config{URLs: []string{"redis://h"}}) {
		t.Error("wantsSentinel does not go by the scheme")
	}

	refused := []struct {
		cfg  Config
		says string
	}{
		{Config{URLs: []string{"redis+sentinel://h1:1"}}, "no master name"},
		{Config{URLs: []string{"redis://h1:1"}, Mode: Sentinel}, "no master name"},
		{Config{URLs: []string{"redis+sentinel://h1:1/a"}, SentinelMaster: "b"}, "two master names"},
		{Config{URLs: []string{"redis+sentinel://h1:1/a?timeout=1"}}, `unknown parameter "timeout"`},
		{Config{URLs: []string{"redis+sentinel://h1:99999/a"}}, "want host:port"},
		{Config{URLs: []string{"unix:///tmp/s.sock"}, SentinelMaster: "a"}, `scheme "unix"`},
		{Config{URLs: []string{"redis+sentinel://h1:1/a/x"}}, `database "x"`},
		{Config{URLs: []string{"redis+sentinel://u:pw1@h1:1/a", "redis+sentinel://u:pw2@h2:1/a"}}, "another user, password"},
		{Config{URLs: []string{"redis://h1:1"}, SentinelMaster: "a", Mode: Cluster}, "with --cluster"},
		{Config{URLs: []string{"redis+sentinel://h1:1/a"}, Mode: Redlock}, "with --redlock"},
		{Config{URLs: []string{"redis+sentinel://h1:1/a"}, Mode: Independent}, "with --independent"},
		{Config{URLs: []string{"redis://h1:1"}, SentinelUser: "watcher"}, "--sentinel-user without --sentinel-master"},
	}
	for _, c := range refused {
		_, _, err := Open(context.Background(), c.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want ErrBadConfig saying %q", c.cfg, err, c.says)
		}
		if err != nil && (strings.Contains(err.Error(), "pw1") || strings.Contains(err.Error(), "pw2")) {
			t.Errorf("a password in %q", err)
		}
	}
}

// Open through the sentinels reaches the master and follows it: FollowMaster hears a SENTINEL
// FAILOVER, then a killed master replaced, then a failover back to the first master, each within a second of the promotion and once though three sentinels announce
// it; Label and Master name the master of the moment; the client writes to it.
func TestSentinelFollowsFailovers(t *testing.T) {
	r := redistest.StartReplicated(t, 2, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target, down, err := Open(ctx, Config{URLs: []string{"redis+sentinel://" + strings.Join(r.SentinelAddrs, ",") + "/" + redistest.MasterName}})
	if err != nil || down != nil {
		t.Fatal(err, down)
	}
	defer target.Close()
	first := r.Nodes[0].Addr
	if want := "sentinel " + redistest.MasterName + " → " + first + " (sentinels " + strings.Join(r.SentinelAddrs, ",") + ")"; target.Label() != want {
		t.Errorf("Label() = %q, want %q", target.Label(), want)
	}
	if target.Mode != Sentinel || target.SentinelMaster() != redistest.MasterName || len(target.Clients) != 1 {
		t.Fatalf("target: mode %v, master %q, %d clients", target.Mode, target.SentinelMaster(), len(target.Clients))
	}
	switches := target.FollowMaster(ctx)
	waitSubscribed(t, r)

	from := first
	for round := range 3 {
		how, t0 := "SENTINEL FAILOVER", time.Now()
		var promoted *redistest.Server
		var err error
		switch round {
		case 0:
			promoted, err = r.Failover(20 * time.Second)
		case 1:
			how = "the master killed"
			_, promoted, err = r.KillMaster(20 * time.Second)
		case 2:
			how = "SENTINEL FAILOVER back to the first master"
			t0, promoted = failoverBack(t, r)
			if promoted != r.Nodes[0] {
				t.Fatalf("promoted %s, want the first master %s (the only replica left)", promoted.Addr, first)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		promotedAt := time.Now()
		var sw MasterSwitch
		select {
		case sw = <-switches:
		case <-time.After(time.Until(promotedAt.Add(time.Second))):
			t.Fatalf("round %d: no switch heard within a second of the promotion of %s", round, promoted.Addr)
		}
		t.Logf("%s: switch %s → %s heard %v after it, %v after a quorum of sentinels named the promoted master",
			how, sw.From, sw.To, sw.At.Sub(t0).Round(time.Millisecond), sw.At.Sub(promotedAt).Round(time.Millisecond))
		if sw.Name != redistest.MasterName || sw.From != from || sw.To != promoted.Addr {
			t.Fatalf("round %d: switch %+v, want %s → %s", round, sw, from, promoted.Addr)
		}
		// Every sentinel has announced the switch once it names the new master: none comes twice.
		redistest.Eventually(t, "every sentinel names the new master", func() bool {
			answers := target.sentinel.askSentinels(ctx, r.SentinelAddrs)
			for range r.SentinelAddrs {
				if a := <-answers; a.master != promoted.Addr {
					return false
				}
			}
			return true
		})
		select {
		case again := <-switches:
			t.Fatalf("round %d: the same switch twice: %+v", round, again)
		case <-time.After(100 * time.Millisecond):
		}
		if m, err := target.Master(ctx); err != nil || m != promoted.Addr {
			t.Fatalf("round %d: Master() = %q, %v, want %s", round, m, err, promoted.Addr)
		}
		if !strings.Contains(target.Label(), "→ "+promoted.Addr+" ") {
			t.Errorf("round %d: Label() = %q after the switch to %s", round, target.Label(), promoted.Addr)
		}
		redistest.Eventually(t, "the failover client writes to the new master", func() bool {
			return target.Clients[0].Set(ctx, "k", round, 0).Err() == nil
		})
		from = promoted.Addr
	}
	cancel()
	select {
	case _, open := <-switches:
		if open {
			t.Fatal("a switch after the context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FollowMaster's channel is not closed when the context ends")
	}
}

// failoverBack asks for SENTINEL FAILOVER until the sentinels accept: they refuse
// (NOGOODSLAVE) until they have taken the demoted master for a replica, which takes them
// seconds. It returns when the accepted attempt began.
func failoverBack(t *testing.T, r *redistest.Replicated) (time.Time, *redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		t0 := time.Now()
		promoted, err := r.Failover(20 * time.Second)
		if err == nil {
			return t0, promoted
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitSubscribed waits until every sentinel has lockscope's subscriber (sentinels have no PUBSUB
// command: CLIENT LIST says it).
func waitSubscribed(t *testing.T, r *redistest.Replicated) {
	t.Helper()
	redistest.Eventually(t, "FollowMaster subscribed on every sentinel", func() bool {
		for _, addr := range r.SentinelAddrs {
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			list, err := c.ClientList(context.Background()).Result()
			_ = c.Close()
			if err != nil || !strings.Contains(list, "name="+ClientName+" ") || !strings.Contains(list, " sub=1 ") {
				return false
			}
		}
		return true
	})
}

// Each way Open through sentinels can fail says so in one line, of the kind the exit code
// is chosen by, without a password.
func TestOpenSentinelErrors(t *testing.T) {
	r := redistest.StartReplicated(t, 0, 1)
	ctx := context.Background()
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
		cfg  Config
		kind error
		says string
	}{
		{"sentinels unreachable", Config{URLs: []string{fmt.Sprintf("redis+sentinel://127.0.0.1:%d/%s", free, name)}},
			ErrUnreachable, fmt.Sprintf("no sentinel answers (127.0.0.1:%d)", free)},
		{"unknown master name", Config{URLs: []string{"redis+sentinel://" + sentinel + "/nosuch"}},
			ErrBadConfig, `monitors no master named "nosuch"`},
		{"not a sentinel", Config{URLs: []string{"redis://" + master}, SentinelMaster: name},
			ErrBadConfig, master + " is not a sentinel"},
		{"wrong sentinel password", Config{URLs: []string{"redis+sentinel://" + sentinel + "/" + name + "?sentinel_username=watcher&sentinel_password=spw-wrong"}},
			ErrAuth, "authentication failed at sentinel " + sentinel},
		{"wrong sentinel password from the environment", Config{URLs: []string{"redis://" + sentinel}, SentinelMaster: name,
			SentinelUser: "watcher", SentinelPassword: "spw-wrong"}, ErrAuth, "$LOCKSCOPE_SENTINEL_PASSWORD"},
		{"wrong master password", Config{URLs: []string{"redis+sentinel://app:mpw-wrong@" + sentinel + "/" + name}},
			ErrAuth, "authentication failed at the master " + master},
	}
	for _, c := range cases {
		start := time.Now()
		_, _, err := Open(ctx, c.cfg)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.what, err, c.kind, c.says)
		} else if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "-wrong") {
			t.Errorf("%s: not one line without the password: %q", c.what, err)
		}
		t.Logf("%s (%v): %v", c.what, time.Since(start).Round(time.Millisecond), err)
	}
	// The right credentials of both.
	target, _, err := Open(ctx, Config{URLs: []string{"redis+sentinel://app:mpw-right@" + sentinel + "/" + name +
		"?sentinel_username=watcher&sentinel_password=spw-right"}})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if who, err := target.Clients[0].Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
		t.Fatalf("connected to the master as %q, %v; want app", who, err)
	}
}

// A switch announced while FollowMaster's connections to the sentinels are down is still
// sent once they are back: it asks who the master is when it subscribes again.
func TestFollowMasterResyncsAfterReconnect(t *testing.T) {
	r := redistest.StartReplicated(t, 1, 1)
	proxy := redistest.NewProxy(t, r.SentinelAddrs[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target, _, err := Open(ctx, Config{URLs: []string{"redis+sentinel://" + proxy.Addr + "/" + redistest.MasterName}})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	switches := target.FollowMaster(ctx)
	waitSubscribed(t, r)
	old := r.Nodes[0].Addr
	proxy.Cut()
	promoted, err := r.Failover(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case sw := <-switches:
		t.Fatalf("a switch heard through a cut connection: %+v", sw)
	case <-time.After(300 * time.Millisecond):
	}
	proxy.Restore()
	restored := time.Now()
	select {
	case sw := <-switches:
		t.Logf("the missed switch sent %v after the sentinel was reachable again", time.Since(restored).Round(time.Millisecond))
		if sw.From != old || sw.To != promoted.Addr {
			t.Fatalf("switch %+v, want %s → %s", sw, old, promoted.Addr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the switch missed while the sentinel was cut off was never sent")
	}
}

// What the sentinels announce, in the orders seen, becomes each failover once: repeats from
// the other sentinels, a stale From from one still busy with the previous failover, that
// previous failover announced late, and a resync after a reconnect.
func TestSwitchFilter(t *testing.T) {
	sw := func(from, to string) MasterSwitch { return MasterSwitch{Name: "m", From: from, To: to} }
	f := switchFilter{last: "a", left: map[string]bool{}}
	var sent []string
	for _, in := range []MasterSwitch{
		sw("a", "b"), sw("a", "b"), sw("a", "b"), // one failover, three sentinels
		sw("a", "c"), // the next, announced with the From of a sentinel that missed b
		sw("a", "b"), // the first one, announced late: b was left already
		sw("b", "c"), // a repeat of the second
		sw("", "c"),  // a resync naming the master known: nothing
		sw("", "a"),  // a resync: a switch was missed
		sw("a", "c"), // a real failover back to a master left before
	} {
		if out, ok := f.accept(in); ok {
			sent = append(sent, out.From+"→"+out.To)
		}
	}
	if got, want := strings.Join(sent, " "), "a→b b→c c→a a→c"; got != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// Sentinel URLs that url.Parse refuses as a whole (several IPv6 sentinels) still have their
// passwords scrubbed from every message, a query that does not parse is refused rather than
// its sentinel_password dropped, and a bracketed IPv6 sentinel without a port gets 26379.
func TestSentinelURLEdges(t *testing.T) {
	leaky := [][]string{
		{"redis+sentinel://[::1]:1,[::1]:2/m?sentinel_password=S3CRETQ", "redis+sentinel://[::1]:3/m"},
		{"redis+sentinel://[::1]:1,[::1]:2/m?sentinel_password=S3CRETQ&x=1"},
		{"redis+sentinel://u:S3CRETU@[::1]:1,[::1]:2/m?sentinel_password=S3CRETQ", "redis+sentinel://[::1]:3/m"},
		{"redis+sentinel://h1:1,h2:2/m?sentinel_password=S3C%zzRETQ"},
		{"redis+sentinel://[::1]:1,[::1]:2/m?sentinel_password=S3C%zzRETQ"},
	}
	for _, urls := range leaky {
		cfg := Config{URLs: urls}
		_, err := sentinelOptions(cfg, nil, secretsOf(cfg))
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("%q: %v, want ErrBadConfig", urls, err)
		} else if strings.Contains(err.Error(), "S3C") {
			t.Errorf("%q: a password in %q", urls, err)
		}
	}
	cfg := Config{URLs: []string{"redis+sentinel://[::1],[::1]:2,::1/m"}}
	fo, err := sentinelOptions(cfg, nil, secretsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fo.SentinelAddrs, " "); got != "[::1]:26379 [::1]:2" {
		t.Errorf("sentinels %q, want [::1]:26379 [::1]:2", got)
	}
}

// A sentinel that monitors several masters announces every one's failovers on the same
// channel: FollowMaster sends only those of its own master. (A sentinel refuses PUBLISH: a
// plain server stands in for it, FollowMaster only subscribes.)
func TestFollowMasterOnlyItsMaster(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target := Target{Mode: Sentinel, Addrs: []string{srv.Addr},
		sentinel: &sentinelState{opts: &redis.FailoverOptions{MasterName: "orders"}, master: "127.0.0.1:7003"}}
	switches := target.FollowMaster(ctx)
	c := srv.Client()
	redistest.Eventually(t, "FollowMaster subscribed", func() bool {
		n, err := c.PubSubNumSub(ctx, switchChannel).Result()
		return err == nil && n[switchChannel] == 1
	})
	for _, payload := range []string{"payments 127.0.0.1 7001 127.0.0.1 7002", "orders 127.0.0.1 7003 127.0.0.1 7004"} {
		if err := c.Publish(ctx, switchChannel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case sw := <-switches:
		if sw.Name != "orders" || sw.From != "127.0.0.1:7003" || sw.To != "127.0.0.1:7004" {
			t.Fatalf("sent %+v, want orders 127.0.0.1:7003 → 127.0.0.1:7004", sw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the switch of orders not sent")
	}
}

// One frozen sentinel of three (SIGSTOP: it accepts connections and never answers, as a
// sentinel on a host cut off does) holds neither Open nor Master back: the two others agree.
// Before, Master waited out the frozen one's timeout (5 s) and the failover client's first
// lookup, which waits for every sentinel, made Open fail after 8-10 s ("cannot reach Redis at
// the master ...: context deadline exceeded", exit 6).
func TestSentinelOneFrozen(t *testing.T) {
	r := redistest.StartReplicated(t, 0, 3)
	r.Sentinels[0].Pause()
	defer r.Sentinels[0].Resume()
	ctx := context.Background()
	start := time.Now()
	target, _, err := Open(ctx, Config{URLs: []string{"redis+sentinel://" + strings.Join(r.SentinelAddrs, ",") + "/" + redistest.MasterName}})
	if err != nil {
		t.Fatalf("Open with one sentinel of three frozen: %v (%v)", err, time.Since(start))
	}
	defer target.Close()
	if err := target.Clients[0].Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	opened := time.Since(start)
	start = time.Now()
	master, err := target.Master(ctx)
	asked := time.Since(start)
	t.Logf("Open and a SET: %v; Master: %v", opened.Round(time.Millisecond), asked.Round(time.Millisecond))
	if err != nil || master != r.Nodes[0].Addr {
		t.Fatalf("Master() = %q, %v; want %s", master, err, r.Nodes[0].Addr)
	}
	// A client of its own (the demo's workers dial one each).
	dial, err := target.Dialer(0)
	if err != nil {
		t.Fatal(err)
	}
	own := dial()
	defer own.Close()
	start = time.Now()
	if err := own.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	dialed := time.Since(start)
	t.Logf("a Dialer's client's first SET: %v", dialed.Round(time.Millisecond))
	if opened > 1500*time.Millisecond || asked > time.Second || dialed > time.Second {
		t.Errorf("a frozen sentinel held Open (%v), Master (%v) or a Dialer's client (%v) back", opened, asked, dialed)
	}
}
