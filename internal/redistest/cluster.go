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

// Cluster is a real Redis Cluster of masters without replicas, owned by a test.
// Kill or Restart one node through its Server (Nodes[i]): a restarted node comes back empty
// with its cluster identity and slots (nodes.conf stays in its directory).
type Cluster struct {
	tb    testing.TB
	Nodes []*Server
	Addrs []string
}

// clusterNodeTimeout is short so tests see a dead node flagged quickly.
const clusterNodeTimeout = "1000"

// StartCluster starts n redis-server processes with cluster mode on, joins them with
// `redis-cli --cluster create --cluster-replicas 0` and waits until every node reports
// cluster_state:ok. opts are passed to every node, e.g.
// WithArgs("--cluster-require-full-coverage", "no") to keep serving with a node down.
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", clusterNodeTimeout}, cfg.args...)
	c := &Cluster{tb: tb}
	for range n {
		s := startClusterNode(tb, args)
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	cliArgs := append([]string{"--cluster", "create"}, c.Addrs...)
	cliArgs = append(cliArgs, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", cliArgs...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, tail(out))
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		tb.Fatal(err)
	}
	return c
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
