package ui

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/scanner"
)

// liveConsole runs the model's commands as Bubble Tea's loop does, each in a goroutine of
// its own, and feeds their messages to Update on the test's goroutine while it waits for a
// screen.
type liveConsole struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
	done chan struct{}
}

func newLiveConsole(t *testing.T, m *Model) *liveConsole {
	c := &liveConsole{t: t, m: m, msgs: make(chan tea.Msg), done: make(chan struct{})}
	t.Cleanup(func() { close(c.done) })
	c.run(m.Init())
	return c
}

func (c *liveConsole) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		select {
		case c.msgs <- msg:
		case <-c.done:
		}
	}()
}

// waitFor processes messages until ok holds for the screen, and returns it with the time it
// first held.
func (c *liveConsole) waitFor(what string, timeout time.Duration, ok func(screen string) bool) (string, time.Time) {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		if s := screen(c.m); ok(s) {
			return s, time.Now()
		}
		select {
		case msg := <-c.msgs:
			if cmds, batch := subCmds(msg); batch {
				for _, sub := range cmds {
					c.run(sub)
				}
				continue
			}
			if msg != nil {
				_, cmd := c.m.Update(msg)
				c.run(cmd)
			}
		case <-deadline:
			c.t.Fatalf("no %s within %v:\n%s", what, timeout, screen(c.m))
		}
	}
}

// liveSentinel is a console on a real master, one replica and three sentinels, with
// lock:order:1001 held (and copied to the replica), showing the master and the lock.
type liveSentinel struct {
	r         *redistest.Replicated
	target    connect.Target
	console   *liveConsole
	locks     *locklib.Client
	held      *locklib.Lock
	oldMaster string
}

func startLiveSentinel(t *testing.T) *liveSentinel {
	t.Helper()
	redistest.Slow(t)
	l := &liveSentinel{r: redistest.StartReplicated(t, 1, 3)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var err error
	l.target, _, err = connect.Open(ctx, connect.Config{
		URLs: []string{"redis+sentinel://" + strings.Join(l.r.SentinelAddrs, ",") + "/" + redistest.MasterName},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.target.Close)
	if l.oldMaster, err = l.r.MasterAddr(); err != nil {
		t.Fatal(err)
	}
	l.locks = locklib.New(l.target.Clients[0], locklib.WithNode("api-7"))
	t.Cleanup(func() { _ = l.locks.Close() })
	if l.held, err = l.locks.Obtain(ctx, "lock:order:1001", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.r.WaitSynced(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	sc := scanner.New(l.target, scanner.Options{Interval: 200 * time.Millisecond})
	follower := sc.Follow(ctx)
	m := newModel(ctx, Options{Target: l.target, Scanner: sc}, follower.Updates(), subscribeEvents(ctx, l.target.Clients))
	m.focus, m.masterCh = follower.Focus, l.target.FollowMaster(ctx)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	l.console = newLiveConsole(t, m)
	l.console.waitFor("the master and the lock", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "sentinel "+redistest.MasterName+" → "+l.oldMaster) && strings.Contains(s, "lock:order:1001")
	})
	return l
}

// failOver runs fail (a failover that returns once a replica is promoted) and waits for the
// status bar to name the new master: within a second of the sentinels' +switch-master, heard
// directly from one of them. It checks the event log's line and the table, and returns the
// screen, the new master and when the bar showed it.
func (l *liveSentinel) failOver(t *testing.T, fail func() error) (string, string, time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	announced := make(chan time.Time, 1)
	sub := redis.NewSentinelClient(&redis.Options{Addr: l.r.SentinelAddrs[0]}).Subscribe(ctx, "+switch-master")
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		if _, err := sub.ReceiveMessage(ctx); err == nil {
			announced <- time.Now()
		}
	}()
	failed := make(chan error, 1)
	started := time.Now()
	go func() { failed <- fail() }()
	out, seen := l.console.waitFor("a new master in the status bar", 20*time.Second, func(s string) bool {
		bar := strings.SplitN(s, "\n", 2)[0]
		return strings.Contains(bar, "sentinel "+redistest.MasterName+" → ") && !strings.Contains(bar, l.oldMaster)
	})
	if err := <-failed; err != nil {
		t.Fatal(err)
	}
	newMaster, err := l.r.MasterAddr()
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	select {
	case at = <-announced:
	case <-time.After(5 * time.Second):
		t.Fatal("the sentinel never announced +switch-master")
	}
	lag := seen.Sub(at)
	t.Logf("failover to +switch-master: %v; +switch-master to the status bar: %v", at.Sub(started).Round(time.Millisecond), lag.Round(time.Millisecond))
	if lag > time.Second {
		t.Errorf("the status bar followed %v after +switch-master, more than a second", lag)
	}
	mustContain(t, lineWith(t, out, "lockscope"), "sentinel "+redistest.MasterName+" → "+newMaster)
	mustContain(t, out, "failover     master "+l.oldMaster+" → "+newMaster)
	lineWith(t, out, "lock:order:1001") // the table is kept
	return out, newMaster, seen
}

// TestLiveSentinelFailover: SENTINEL FAILOVER; the status bar follows the new master within
// a second of +switch-master, the event log says so, the table is kept, and the lock lost and
// taken again on the new master is marked ⇡ with its fence-jump line.
func TestLiveSentinelFailover(t *testing.T) {
	l := startLiveSentinel(t)
	l.failOver(t, func() error { _, err := l.r.Failover(20 * time.Second); return err })

	// The lock lost on the new master (as when the failover comes before the replica copied
	// it) and taken again there: a token other than the one at the switch.
	ctx := context.Background()
	before := l.held.Token()
	redistest.Eventually(t, "the lock deleted on the new master", func() bool {
		return l.target.Clients[0].Del(ctx, "lock:order:1001").Err() == nil
	})
	var again *locklib.Lock
	var err error
	redistest.Eventually(t, "the lock taken on the new master", func() bool {
		again, err = l.locks.Obtain(ctx, "lock:order:1001", time.Minute)
		return err == nil
	})
	t.Cleanup(func() { _ = again.Release(context.Background()) })
	if again.Token() == before {
		t.Fatalf("the same token %d after the failover", before)
	}
	out, _ := l.console.waitFor("the jumped token", 10*time.Second, func(s string) bool {
		return strings.Contains(s, jumpMark+itoa(again.Token()))
	})
	mustContain(t, out, "fence-jump   lock:order:1001 fence="+itoa(before)+" → "+itoa(again.Token()))
}

// TestLiveSentinelMasterKilled: the master killed; the status bar follows the promoted
// replica within a second of +switch-master, and the dead master, no server of the target
// any more, does not turn the connection stale.
func TestLiveSentinelMasterKilled(t *testing.T) {
	l := startLiveSentinel(t)
	_, _, seen := l.failOver(t, func() error { _, _, err := l.r.KillMaster(20 * time.Second); return err })
	out, _ := l.console.waitFor("5 s after the switch", 10*time.Second, func(string) bool { return time.Since(seen) > 5*time.Second })
	mustContain(t, lineWith(t, out, "lockscope"), "● live")
	lineWith(t, out, "lock:order:1001")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
