package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster, owned by a test: masters without replicas, or with
// ClusterReplicas. Kill or Restart one node through its Server (Nodes[i]): a restarted node
// comes back empty with its cluster identity and slots (nodes.conf stays in its directory).
type Cluster struct {
	tb    testing.TB
	Nodes []*Server
	Addrs []string
}

// clusterNodeTimeout is short so tests see a dead node flagged quickly.
const clusterNodeTimeout = "1000"

// StartCluster starts n masters (and, with ClusterReplicas(k), k replicas of each: Nodes[:n]
// are the masters at start), joins them with `redis-cli --cluster create` and waits until
// every node reports cluster_state:ok. opts are passed to every node, e.g.
// WithArgs("--cluster-require-full-coverage", "no") to keep serving with a node down.
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	// No 5 s wait before a replica's first full sync (Redis 7's default diskless delay).
	args := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", clusterNodeTimeout, "--repl-diskless-sync-delay", "0"}, cfg.args...)
	c := &Cluster{tb: tb}
	for range n * (1 + cfg.clusterReplicas) {
		s := startClusterNode(tb, args)
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	cliArgs := append([]string{"--cluster", "create"}, c.Addrs...)
	cliArgs = append(cliArgs, "--cluster-replicas", strconv.Itoa(cfg.clusterReplicas), "--cluster-yes")
	out, err := exec.Command("redis-cli", cliArgs...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, tail(out))
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		tb.Fatal(err)
	}
	if cfg.clusterReplicas > 0 {
		if err := c.waitReplicasKnown(30*time.Second, n*cfg.clusterReplicas); err != nil {
			tb.Fatal(err)
		}
		if err := c.waitReplicasSynced(30*time.Second, cfg.clusterReplicas); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// ClusterReplicas gives every master of StartCluster k replicas.
func ClusterReplicas(k int) Option {
	return func(c *config) { c.clusterReplicas = k }
}

// startClusterNode starts one node on a port whose cluster bus port (port+10000) is free too.
func startClusterNode(tb testing.TB, args []string) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, dir: tb.TempDir(), args: args}
	tb.Cleanup(s.stop)
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		port, err := freeClusterPort()
		if err != nil {
			lastErr = err
			continue
		}
		s.Port, s.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.launch(bin); lastErr == nil {
			return s
		}
	}
	tb.Fatalf("redistest: could not start a cluster node: %v", lastErr)
	return nil
}

// freeClusterPort picks a port below 55536 (so port+10000 is valid) where both the port and
// its bus port are free right now. Ports come from a range the kernel does not hand out as
// ephemeral ports by default (32768-60999), so outgoing connections rarely take them.
func freeClusterPort() (int, error) {
	for range 50 {
		port := 20000 + rand.IntN(10000)
		if portFree(port) && portFree(port+10000) {
			return port, nil
		}
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Client returns a cluster client seeded with every node, closed when the test ends.
func (c *Cluster) Client(opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := &redis.ClusterOptions{Addrs: c.Addrs, DialTimeout: time.Second}
	for _, f := range opts {
		f(o)
	}
	cc := redis.NewClusterClient(o)
	c.tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// WaitOK waits until every running node reports cluster_state:ok and knows every node.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			info, err := clusterInfo(s.Addr)
			if err != nil {
				ok, last = false, fmt.Sprintf("%s: %v", s.Addr, err)
				break
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))) {
				ok, last = false, s.Addr+": "+firstLine(info, "cluster_state:")
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: cluster not ok after %v: %s", timeout, last)
}

// State is the cluster_state CLUSTER INFO reports on node i ("ok", "fail").
func (c *Cluster) State(i int) (string, error) {
	info, err := clusterInfo(c.Nodes[i].Addr)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(firstLine(info, "cluster_state:"), "cluster_state:"), nil
}

func clusterInfo(addr string) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cl.ClusterInfo(ctx).Result()
}

func firstLine(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID, Addr, MasterID string // MasterID is "" for a master
	Master, Failed     bool   // Failed: flagged fail (or fail?) by the node asked
}

// Topology is the cluster as the first running node sees it (CLUSTER NODES).
func (c *Cluster) Topology() ([]ClusterNode, error) {
	var last error
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		text, err := cl.ClusterNodes(ctx).Result()
		cancel()
		_ = cl.Close()
		if err != nil {
			last = err
			continue
		}
		var out []ClusterNode
		for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
			// <id> <ip:port@bus> <flags> <master id or -> ...
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			n := ClusterNode{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0]}
			flags := "," + f[2] + ","
			n.Master = strings.Contains(flags, ",master,")
			n.Failed = strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,")
			if f[3] != "-" {
				n.MasterID = f[3]
			}
			out = append(out, n)
		}
		return out, nil
	}
	return nil, fmt.Errorf("redistest: no cluster node answered CLUSTER NODES: %v", last)
}

// Node is the node at addr.
func (c *Cluster) Node(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// MasterOf is the running master serving key's slot, and its replicas. A question that
// failed in Redis or the network (a loaded machine can take more than one attempt's 2 s to
// answer CLUSTER SHARDS) is asked again, for up to 10 s.
func (c *Cluster) MasterOf(key string) (master *Server, replicas []*Server, err error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var asked bool
		master, replicas, asked, err = c.masterOnce(key)
		if err == nil || asked || !time.Now().Before(deadline) {
			return master, replicas, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// masterOnce is one attempt of MasterOf; asked says the cluster answered (an error then is
// about what it said, not a failure to ask).
func (c *Cluster) masterOnce(key string) (master *Server, replicas []*Server, asked bool, err error) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.answeringAddrs(), DialTimeout: time.Second, MaxRetries: -1})
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// The slot map reloads lazily; ask it fresh.
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil, nil, false, err
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return nil, nil, false, err
	}
	for _, sh := range shards {
		serves := false
		for _, r := range sh.Slots {
			serves = serves || (r.Start <= slot && slot <= r.End)
		}
		if !serves {
			continue
		}
		for _, n := range sh.Nodes {
			s := c.Node(net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)))
			// Redis 7.0 reports a replica of a master that has not written yet (offset 0)
			// as "loading", in sync or not: only "failed" rules a replica out.
			switch {
			case s == nil || !s.Running() || n.Health == "failed":
			case n.Role == "master":
				if n.Health == "online" {
					master = s
				}
			default:
				replicas = append(replicas, s)
			}
		}
		if master == nil {
			return nil, nil, true, fmt.Errorf("redistest: no online master of this cluster serves slot %d", slot)
		}
		return master, replicas, true, nil
	}
	return nil, nil, true, fmt.Errorf("redistest: no node serves slot %d", slot)
}

// FailoverForce promotes replica at once (CLUSTER FAILOVER FORCE: no hand-shake with its
// master, which may be dead) and waits until it says it is a master, the cluster is ok and
// every node names it master.
func (c *Cluster) FailoverForce(replica *Server, timeout time.Duration) error {
	cl := redis.NewClient(&redis.Options{Addr: replica.Addr, DialTimeout: time.Second, MaxRetries: -1})
	err := cl.Do(context.Background(), "CLUSTER", "FAILOVER", "FORCE").Err()
	_ = cl.Close()
	if err != nil {
		return fmt.Errorf("redistest: CLUSTER FAILOVER FORCE on %s: %w", replica.Addr, err)
	}
	return c.waitMaster(replica.Addr, timeout)
}

// KillMaster kills the master serving key's slot and waits until one of its replicas was
// elected in its place (cluster-node-timeout, then an election: two to four seconds) and the
// cluster is ok again. It returns the old and the new master.
func (c *Cluster) KillMaster(key string, timeout time.Duration) (old, promoted *Server, err error) {
	old, replicas, err := c.MasterOf(key)
	if err != nil {
		return nil, nil, err
	}
	if len(replicas) == 0 {
		return nil, nil, fmt.Errorf("redistest: %s has no running replica to promote", old.Addr)
	}
	old.Kill()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, r := range replicas {
			if role, err := roleOf(r.Addr); err == nil && role == "master" {
				return old, r, c.WaitOK(time.Until(deadline))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return old, nil, fmt.Errorf("redistest: no replica of %s promoted within %v", old.Addr, timeout)
}

// StallReplication freezes the replicas of the master serving key (SIGSTOP) and closes their
// links on the master, as Replicated.StallReplication does, so that what the master
// acknowledges from now on reaches none of them. resume thaws them, and they catch up; kill
// the master before, and what it acknowledged in between is lost, as when a master dies
// before its replicas copied a write.
func (c *Cluster) StallReplication(key string) (master *Server, replicas []*Server, resume func(), err error) {
	master, replicas, err = c.MasterOf(key)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(replicas) == 0 {
		return nil, nil, nil, fmt.Errorf("redistest: %s has no running replica", master.Addr)
	}
	if resume, err = stall(master, replicas, [][]any{{"CLIENT", "KILL", "TYPE", "replica"}}); err != nil {
		return nil, nil, nil, err
	}
	return master, replicas, resume, nil
}

// waitMaster waits until addr says it is a master, the cluster is ok, and every node that
// answers names addr an online master: gossip brings the promotion to the other nodes a
// little after the promoted node knows it, and until then they answer CLUSTER SHARDS (and a
// client's slot map) with the old master.
func (c *Cluster) waitMaster(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if role, err := roleOf(addr); err == nil && role == "master" {
			if err := c.WaitOK(time.Until(deadline)); err != nil {
				return err
			}
			return c.waitMasterKnown(addr, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: %s did not become master within %v", addr, timeout)
}

func (c *Cluster) waitMasterKnown(addr string, deadline time.Time) error {
	err := c.waitEveryView(deadline, func(text string) string {
		if namesOnlineMaster(text, addr) {
			return ""
		}
		return "does not name " + addr + " an online master yet"
	})
	if err != nil {
		return fmt.Errorf("redistest: %s is master, but not to every node in time: %w", addr, err)
	}
	return nil
}

// namesOnlineMaster reports whether CLUSTER NODES text has addr as a master not flagged
// failing.
func namesOnlineMaster(text, addr string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[1], addr+"@") {
			continue
		}
		flags := "," + f[2] + ","
		return strings.Contains(flags, ",master,") && !strings.Contains(flags, ",fail,") && !strings.Contains(flags, ",fail?,")
	}
	return false
}

// WaitReplicasSynced waits until every running replica has its master's stream up to where
// it was when the wait began.
func (c *Cluster) WaitReplicasSynced(timeout time.Duration) error {
	return c.waitReplicasSynced(timeout, 0)
}

// waitReplicasSynced is WaitReplicasSynced for at least perMaster replicas of each master:
// right after CLUSTER create, the node asked may not know a master's replicas yet (gossip),
// and a master with none known would count as in sync.
func (c *Cluster) waitReplicasSynced(timeout time.Duration, perMaster int) error {
	deadline := time.Now().Add(timeout)
	last := ""
	targets := syncTargets{}
	for time.Now().Before(deadline) {
		nodes, err := c.Topology()
		if err != nil {
			last = err.Error()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		ok := true
		for _, n := range nodes {
			if !n.Master || n.Failed {
				continue
			}
			known := 0
			for _, r := range nodes {
				if r.MasterID == n.ID && !r.Failed {
					known++
				}
			}
			want := max(known, perMaster)
			info, err := infoReplication(n.Addr)
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			if synced := targets.inSync(n.Addr, info); synced < want {
				ok, last = false, fmt.Sprintf("%s: %d of %d replicas in sync", n.Addr, synced, want)
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redistest: cluster replicas not in sync after %v: %s", timeout, last)
}

// answeringAddrs are the nodes that can answer now: running and not paused (a question sent
// to a node stalled by StallReplication would wait out the timeout).
func (c *Cluster) answeringAddrs() []string {
	var addrs []string
	for _, s := range c.Nodes {
		s.mu.Lock()
		paused := s.paused
		s.mu.Unlock()
		if s.Running() && !paused {
			addrs = append(addrs, s.Addr)
		}
	}
	return addrs
}

// waitReplicasKnown waits until every node's CLUSTER NODES names want replicas: a node learns
// the roles --cluster create assigned by gossip, and until then it answers CLUSTER SHARDS (and
// a client's slot map) without them.
func (c *Cluster) waitReplicasKnown(timeout time.Duration, want int) error {
	err := c.waitEveryView(time.Now().Add(timeout), func(text string) string {
		if got := strings.Count(text, " slave ") + strings.Count(text, ",slave "); got < want {
			return fmt.Sprintf("knows %d of %d replicas", got, want)
		}
		return ""
	})
	if err != nil {
		return fmt.Errorf("redistest: cluster replicas not known to every node after %v: %w", timeout, err)
	}
	return nil
}

// waitEveryView waits until the CLUSTER NODES of every node that can answer passes check
// (which says what is still wrong, "" when nothing) and returns the last problem seen when
// deadline passes first.
func (c *Cluster) waitEveryView(deadline time.Time, check func(text string) string) error {
	last := "no node answered"
	for time.Now().Before(deadline) {
		ok := true
		for _, a := range c.answeringAddrs() {
			cl := redis.NewClient(&redis.Options{Addr: a, DialTimeout: 500 * time.Millisecond, MaxRetries: -1})
			text, err := cl.ClusterNodes(context.Background()).Result()
			_ = cl.Close()
			if err != nil {
				ok, last = false, fmt.Sprintf("%s: %v", a, err)
				break
			}
			if problem := check(text); problem != "" {
				ok, last = false, a+" "+problem
				break
			}
		}
		if ok {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New(last)
}
