package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels of a Replicated set monitor it under.
const MasterName = "lockscope-test"

// Sentinel timings: short, so a test sees a dead master replaced in two to four seconds.
const (
	sentinelDownAfter       = "1000"
	sentinelFailoverTimeout = "3000"
)

// Replicated is a master with replicas behind sentinels, all real processes owned by a test.
// Nodes[0] starts as the master; after a failover Master says which node is. Faults go
// through the Servers (Kill, Pause) or through KillMaster and Failover, which wait until the
// sentinels have promoted a replica.
type Replicated struct {
	tb            testing.TB
	Nodes         []*Server // data nodes
	Sentinels     []*Server
	SentinelAddrs []string
	// Quorum is how many sentinels must agree that the master is down.
	Quorum int
}

// StartReplicated starts a master, `replicas` replicas of it and `sentinels` sentinels
// monitoring it as MasterName, and waits until every replica is in sync and every sentinel
// knows every replica and every other sentinel. opts go to the data nodes (not the sentinels).
func StartReplicated(tb testing.TB, replicas, sentinels int, opts ...Option) *Replicated {
	tb.Helper()
	if sentinels < 1 {
		tb.Fatal("redistest: a replicated set needs at least one sentinel")
	}
	r := &Replicated{tb: tb, Quorum: sentinels/2 + 1}
	// A replica that comes back empty (Rejoin) or follows a new master needs a full sync,
	// which Redis 7 delays 5 s by default in case more replicas want one.
	opts = append([]Option{WithArgs("--repl-diskless-sync-delay", "0")}, opts...)
	master := Start(tb, opts...)
	r.Nodes = append(r.Nodes, master)
	for range replicas {
		replicaOpts := append(append([]Option(nil), opts...), WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port)))
		r.Nodes = append(r.Nodes, Start(tb, replicaOpts...))
	}
	for range sentinels {
		s := startSentinel(tb, master.Port, r.Quorum)
		r.Sentinels = append(r.Sentinels, s)
		r.SentinelAddrs = append(r.SentinelAddrs, s.Addr)
	}
	if err := r.WaitSynced(20 * time.Second); err != nil {
		tb.Fatal(err)
	}
	if err := r.waitSentinelsKnow(replicas, sentinels-1, 20*time.Second); err != nil {
		tb.Fatal(err)
	}
	return r
}

// startSentinel starts `redis-server <conf> --sentinel` monitoring the master on masterPort.
func startSentinel(tb testing.TB, masterPort, quorum int) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, dir: tb.TempDir()}
	tb.Cleanup(s.stop)
	conf := filepath.Join(s.dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]s\n"+
		"sentinel failover-timeout %[1]s %[5]s\n"+
		"sentinel parallel-syncs %[1]s 2\n",
		MasterName, masterPort, quorum, sentinelDownAfter, sentinelFailoverTimeout)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.conf = []string{conf, "--sentinel"}
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		port, err := FreePort()
		if err != nil {
			tb.Fatal(err)
		}
		s.Port, s.Addr = port, "127.0.0.1:"+strconv.Itoa(port)
		if lastErr = s.launch(bin); lastErr == nil {
			return s
		}
	}
	tb.Fatalf("redistest: could not start a sentinel: %v", lastErr)
	return nil
}

// Client returns a go-redis failover client (through the sentinels), closed when the test ends.
func (r *Replicated) Client(opts ...func(*redis.FailoverOptions)) *redis.Client {
	o := &redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: r.SentinelAddrs, DialTimeout: time.Second}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewFailoverClient(o)
	r.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr is the master's address as the first answering sentinel names it.
func (r *Replicated) MasterAddr() (string, error) {
	var last error
	for _, s := range r.Sentinels {
		if !s.Running() {
			continue
		}
		addr, err := sentinelMaster(s.Addr)
		if err == nil {
			return addr, nil
		}
		last = err
	}
	return "", fmt.Errorf("redistest: no sentinel names the master: %v", last)
}

// Master is the node the sentinels name as master now.
func (r *Replicated) Master() (*Server, error) {
	addr, err := r.MasterAddr()
	if err != nil {
		return nil, err
	}
	return r.node(addr)
}

// Replicas are the running data nodes that are not the master.
func (r *Replicated) Replicas() ([]*Server, error) {
	m, err := r.Master()
	if err != nil {
		return nil, err
	}
	var out []*Server
	for _, n := range r.Nodes {
		if n != m && n.Running() {
			out = append(out, n)
		}
	}
	return out, nil
}

func (r *Replicated) node(addr string) (*Server, error) {
	for _, n := range r.Nodes {
		if n.Addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("redistest: the sentinels name %s, which is none of the set's nodes", addr)
}

// KillMaster kills the master (SIGKILL: what it had not yet sent its replicas is lost) and
// waits until the sentinels have promoted a replica and it accepts writes. It returns the
// old and the new master. Bring the old one back with Rejoin.
func (r *Replicated) KillMaster(timeout time.Duration) (old, promoted *Server, err error) {
	old, err = r.Master()
	if err != nil {
		return nil, nil, err
	}
	old.Kill()
	promoted, err = r.WaitPromoted(old, timeout)
	return old, promoted, err
}

// Failover asks a sentinel to fail the running master over (SENTINEL FAILOVER: no agreement
// asked of the others, no wait for the replicas to catch up) and waits until a replica is
// master and accepts writes. The old master is made a replica of it.
func (r *Replicated) Failover(timeout time.Duration) (promoted *Server, err error) {
	old, err := r.Master()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range r.Sentinels {
			if !s.Running() {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, MaxRetries: -1})
			err = c.Do(context.Background(), "SENTINEL", "FAILOVER", MasterName).Err()
			_ = c.Close()
			if err == nil {
				break
			}
		}
		// A replica that was frozen longer than down-after-milliseconds is no candidate until
		// the sentinels have heard from it again (within a second of its thaw).
		if err == nil || !strings.Contains(err.Error(), "NOGOODSLAVE") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("redistest: SENTINEL FAILOVER: %w", err)
	}
	return r.WaitPromoted(old, time.Until(deadline))
}

// StallReplication freezes the given replicas, or every replica when none is given (SIGSTOP),
// and closes their links on the master, so that what the master acknowledges from now on
// reaches none of them (a frozen replica alone is not enough: its kernel keeps taking the
// stream into the socket's buffer). resume thaws them; they reconnect and catch up, unless
// the master died meanwhile: then what it acknowledged in between is lost, as when a master
// dies before its replicas copied a write.
func (r *Replicated) StallReplication(replicas ...*Server) (resume func(), err error) {
	m, err := r.Master()
	if err != nil {
		return nil, err
	}
	all := len(replicas) == 0
	if all {
		if replicas, err = r.Replicas(); err != nil {
			return nil, err
		}
	}
	// The master knows a replica's link by the link's address, which only the replica tells
	// (its master client's laddr): asked before it is frozen.
	kill := [][]any{{"CLIENT", "KILL", "TYPE", "replica"}}
	if !all {
		kill = kill[:0]
		for _, s := range replicas {
			laddr, err := masterLinkAddr(s.Addr)
			if err != nil {
				return nil, err
			}
			kill = append(kill, []any{"CLIENT", "KILL", "ADDR", laddr})
		}
	}
	return stall(m, replicas, kill)
}

// stall freezes replicas (SIGSTOP) and sends master the commands in kill, which close their
// links there. resume thaws those still running; on an error they are thawed already.
func stall(master *Server, replicas []*Server, kill [][]any) (resume func(), err error) {
	for _, s := range replicas {
		s.Pause()
	}
	resume = func() {
		for _, s := range replicas {
			if s.Running() {
				s.Resume()
			}
		}
	}
	c := redis.NewClient(&redis.Options{Addr: master.Addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	for _, args := range kill {
		if err := c.Do(context.Background(), args...).Err(); err != nil {
			resume()
			return nil, fmt.Errorf("redistest: %v on %s: %w", args, master.Addr, err)
		}
	}
	return resume, nil
}

// masterLinkAddr is the local address of a replica's connection to its master.
func masterLinkAddr(replica string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	list, err := c.Do(context.Background(), "CLIENT", "LIST", "TYPE", "master").Text()
	if err != nil {
		return "", fmt.Errorf("redistest: CLIENT LIST TYPE master on %s: %w", replica, err)
	}
	for f := range strings.FieldsSeq(list) {
		if laddr, ok := strings.CutPrefix(f, "laddr="); ok {
			return laddr, nil
		}
	}
	return "", fmt.Errorf("redistest: %s has no link to a master", replica)
}

// WaitPromoted waits until a quorum of sentinels names a master other than old and that node
// says it is a master (role:master), so writes sent to it now are accepted.
func (r *Replicated) WaitPromoted(old *Server, timeout time.Duration) (*Server, error) {
	deadline := time.Now().Add(timeout)
	last := "no sentinel answered"
	for time.Now().Before(deadline) {
		votes := map[string]int{}
		for _, s := range r.Sentinels {
			if !s.Running() {
				continue
			}
			if addr, err := sentinelMaster(s.Addr); err == nil && addr != old.Addr {
				votes[addr]++
			}
		}
		for addr, n := range votes {
			if n < r.Quorum {
				last = fmt.Sprintf("%d sentinels name %s", n, addr)
				continue
			}
			if role, err := roleOf(addr); err != nil || role != "master" {
				last = fmt.Sprintf("%s is named but says role %q (%v)", addr, role, err)
				continue
			}
			return r.node(addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("redistest: no replica promoted within %v after %s: %s", timeout, old.Addr, last)
}

// Rejoin restarts a killed node empty; the sentinels make it a replica of the current master
// (they reconfigure a node that comes back claiming to be master). It waits until it is in sync.
func (r *Replicated) Rejoin(n *Server, timeout time.Duration) error {
	m, err := r.Master()
	if err != nil {
		return err
	}
	n.args = replicaOf(n.args, m.Port)
	n.Restart()
	return r.WaitSynced(timeout)
}

// replicaOf sets --replicaof in a node's arguments to the master on port.
func replicaOf(args []string, port int) []string {
	out := make([]string, 0, len(args)+3)
	for i := 0; i < len(args); i++ {
		if args[i] == "--replicaof" && i+2 < len(args) {
			i += 2
			continue
		}
		out = append(out, args[i])
	}
	return append(out, "--replicaof", "127.0.0.1", strconv.Itoa(port))
}

// WaitSynced waits until every running replica is connected to the master and has
// acknowledged the master's replication stream up to where it was when the wait began.
func (r *Replicated) WaitSynced(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	targets := syncTargets{}
	for time.Now().Before(deadline) {
		m, err := r.Master()
		if err != nil {
			last = err.Error()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		running := 0
		for _, n := range r.Nodes {
			if n != m && n.Running() {
				running++
			}
		}
		info, err := infoReplication(m.Addr)
		if err == nil {
			synced := targets.inSync(m.Addr, info)
			if synced >= running {
				return nil
			}
			last = fmt.Sprintf("%d of %d replicas in sync", synced, running)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redistest: replicas not in sync after %v: %s", timeout, last)
}

// waitSentinelsKnow waits until every sentinel sees the master's replicas and the other sentinels.
func (r *Replicated) waitSentinelsKnow(replicas, others int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range r.Sentinels {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, MaxRetries: -1})
			m, err := c.Do(context.Background(), "SENTINEL", "MASTER", MasterName).Result()
			_ = c.Close()
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			fields := sentinelFields(m)
			if fields["num-slaves"] != strconv.Itoa(replicas) || fields["num-other-sentinels"] != strconv.Itoa(others) {
				ok, last = false, fmt.Sprintf("%s knows %s replicas, %s other sentinels", s.Addr, fields["num-slaves"], fields["num-other-sentinels"])
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: sentinels not ready after %v: %s", timeout, last)
}

// sentinelFields reads SENTINEL MASTER's reply (a flat list in RESP2, a map in RESP3).
func sentinelFields(reply any) map[string]string {
	out := map[string]string{}
	switch v := reply.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, val := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	}
	return out
}

func sentinelMaster(addr string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	return strings.Join(hp, ":"), nil
}

func roleOf(addr string) (string, error) {
	info, err := infoReplication(addr)
	if err != nil {
		return "", err
	}
	return infoField(info, "role"), nil
}

func infoReplication(addr string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Info(ctx, "replication").Result()
}

func infoField(info, name string) string {
	return strings.TrimPrefix(firstLine(info, name+":"), name+":")
}

// syncTargets remembers, per master address, the master's replication offset when a wait
// first read it: a replica is in sync once it acknowledged that much. While clients keep
// writing (a test contending for locks meanwhile) a replica is always a little behind the
// master's current offset, and a wait for that would not end.
type syncTargets map[string]int64

// inSync counts the replicas in the INFO replication of the master at addr that are online
// and have acknowledged its stream up to its target.
func (t syncTargets) inSync(addr, info string) int {
	target, ok := t[addr]
	if !ok {
		target, _ = strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
		t[addr] = target
	}
	synced := 0
	for line := range strings.SplitSeq(info, "\n") {
		// slave0:ip=127.0.0.1,port=1234,state=online,offset=42,lag=0
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, "state=online") {
			continue
		}
		for field := range strings.SplitSeq(strings.TrimSpace(line), ",") {
			v, ok := strings.CutPrefix(field, "offset=")
			if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil && n >= target {
				synced++
			}
		}
	}
	return synced
}
