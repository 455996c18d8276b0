package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer: the failover-replica scenario runs real redis-server processes.
var ErrNoRedisServer = errors.New("the failover-replica scenario needs redis-server on PATH " +
	"(it starts a master, a replica and a sentinel of its own): apt-get install redis-server")

// ReplicaMasterName is the name the demo's sentinel monitors its master under.
const ReplicaMasterName = "lockscope-demo"

// Sentinel timings. The demo fails the master over itself (SENTINEL FAILOVER right after the
// kill: about a second without a master, so a holder whose lock the failover lost may still
// believe it holds it when another worker takes it on the new master); the sentinel's own
// down detection is slow on purpose: at 0.5 and 1 s, a loaded machine's sentinel also failed
// healthy masters over, a just-promoted one among them (to a replica still syncing).
const (
	replicaDownAfterMs       = 5000
	replicaFailoverTimeoutMs = 3000
	replicaStartTimeout      = 10 * time.Second
)

// ReplicaSet is a master, one replica and one sentinel: real redis-server processes the demo
// starts in a temporary directory of its own, on free loopback ports, and kills (with the
// directory) at Close. Each process also dies with lockscope (Pdeathsig), so none outlives
// it. It touches nothing it did not start.
type ReplicaSet struct {
	bin      string
	dir      string
	nodes    [2]*redisProcess // data nodes: nodes[0] starts as the master
	sentinel *redisProcess

	closeOnce sync.Once
}

// redisProcess is one redis-server the ReplicaSet started.
type redisProcess struct {
	addr string
	args []string // after the fixed ones (port, dir, log file)

	mu     sync.Mutex // guards args and starts; a start (launch) and a kill wait for each other
	proc   redisproc.Process
	starts int
}

// StartReplicaSet starts the master, the replica (in sync before it returns) and the
// sentinel (knowing the replica before it returns). ErrNoRedisServer when redis-server is
// not on PATH.
func StartReplicaSet(ctx context.Context) (*ReplicaSet, error) {
	bin, err := redisproc.Binary()
	if err != nil {
		return nil, ErrNoRedisServer
	}
	dir, err := os.MkdirTemp("", "lockscope-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	r := &ReplicaSet{bin: bin, dir: dir}
	if err := r.start(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *ReplicaSet) start(ctx context.Context) error {
	var err error
	if r.nodes[0], err = r.launchNew(ctx, "node0"); err != nil {
		return err
	}
	master := r.nodes[0].addr
	if r.nodes[1], err = r.launchNew(ctx, "node1", "--replicaof", "127.0.0.1", portOf(master)); err != nil {
		return err
	}
	if err := r.waitSynced(ctx, master, replicaStartTimeout); err != nil {
		return err
	}
	conf := filepath.Join(r.dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 1\n"+
		"sentinel down-after-milliseconds %[1]s %[3]d\n"+
		"sentinel failover-timeout %[1]s %[4]d\n"+
		// Known from the start: discovering it takes the sentinel's first INFO round.
		"sentinel known-replica %[1]s 127.0.0.1 %[5]s\n",
		ReplicaMasterName, portOf(master), replicaDownAfterMs, replicaFailoverTimeoutMs, portOf(r.nodes[1].addr))
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if r.sentinel, err = r.launchNew(ctx, "sentinel", conf, "--sentinel"); err != nil {
		return err
	}
	return r.waitSentinelReady(ctx, replicaStartTimeout)
}

// launchNew starts a process on a free port (a few ports are tried: another process may
// take a free port between our probe and redis-server's bind).
func (r *ReplicaSet) launchNew(ctx context.Context, name string, args ...string) (*redisProcess, error) {
	var last error
	for range 5 {
		port, err := redisproc.FreePort()
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		p := &redisProcess{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), args: args}
		if last = r.launch(ctx, p, name); last == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("demo: start redis-server (%s): %w", name, last)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// launch starts p's process and waits until it answers, as itself.
func (r *ReplicaSet) launch(ctx context.Context, p *redisProcess, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	logPath := filepath.Join(r.dir, fmt.Sprintf("%s-%d.log", name, p.starts))
	cfg := redisproc.Config{Bin: r.bin, Port: portOf(p.addr), Dir: r.dir, LogFile: logPath}
	if n := len(p.args); n > 0 && p.args[n-1] == "--sentinel" {
		cfg.Conf = p.args // the config file and --sentinel come first
	} else {
		// A data node: its own RDB file, and a full sync without the default 5 s wait for more replicas.
		cfg.Args = append([]string{"--dbfilename", name + ".rdb", "--repl-diskless-sync-delay", "0"}, p.args...)
	}
	exited, err := p.proc.Start(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(replicaStartTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on %s exited at start: %s", p.addr, lastLine(log))
		default:
		}
		if answersAs(ctx, p.addr, p.proc.Pid()) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.proc.Kill()
	return fmt.Errorf("redis-server on %s did not answer PING within %v", p.addr, replicaStartTimeout)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// answersAs reports whether the server on addr is the process pid: a port found free may be
// taken by another server before ours binds it, and the demo must never use that one.
func answersAs(ctx context.Context, addr string, pid int) bool {
	c := adminClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	return err == nil && infoField(info, "process_id") == strconv.Itoa(pid)
}

// adminClient is a one-off client of the set's own tooling: no retries, short timeouts.
func adminClient(addr string) *redis.Client { return redis.NewClient(adminOptions(addr)) }

// adminOptions are the options of adminClient, and of the one-off sentinel client of Master.
func adminOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Protocol: 2, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, MaxRetries: -1, PoolSize: 1}
}

// kill kills the process (SIGKILL, a paused one too) once a start in progress has ended, and
// waits until it has exited.
func (p *redisProcess) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proc.Kill()
}

// Close kills every process and removes the directory.
func (r *ReplicaSet) Close() {
	r.closeOnce.Do(func() {
		for _, p := range append(r.nodes[:], r.sentinel) {
			if p != nil {
				p.kill()
			}
		}
		_ = os.RemoveAll(r.dir)
	})
}

// Label names the set for a status bar.
func (r *ReplicaSet) Label() string {
	return "replica set, sentinel " + r.sentinel.addr // short: the status bar shows it after the master
}

// failoverOptions are the options of every failover client of the set: short timeouts (a
// dead master must fail fast), and one retry (a pooled connection is dead after a switch).
func (r *ReplicaSet) failoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:    ReplicaMasterName,
		SentinelAddrs: []string{r.sentinel.addr},
		Protocol:      2,
		DialTimeout:   250 * time.Millisecond,
		ReadTimeout:   time.Second,
		WriteTimeout:  time.Second,
		MaxRetries:    1,
		PoolSize:      4,
	}
}

// Servers are the set as the demo's: each worker dials its own failover client, which asks
// the sentinel for the master and follows its +switch-master.
func (r *ReplicaSet) Servers() Servers {
	return Servers{
		Label:       r.Label(),
		Addrs:       []string{"sentinel " + r.sentinel.addr},
		Dial:        func(int) redis.UniversalClient { return redis.NewFailoverClient(r.failoverOptions()) },
		Replication: r,
	}
}

// Inspect is a Sentinel target on the set, for the scanner and the console: its lock table
// and status bar follow the master as the sentinel switches it. The caller closes it.
func (r *ReplicaSet) Inspect(ctx context.Context) (connect.Target, error) {
	t, _, err := connect.Open(ctx, connect.Config{URLs: []string{"redis://" + r.sentinel.addr}, SentinelMaster: ReplicaMasterName})
	return t, err
}

// Master is the master's address as the sentinel names it now.
func (r *ReplicaSet) Master(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(adminOptions(r.sentinel.addr))
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	hp, err := c.GetMasterAddrByName(ctx, ReplicaMasterName).Result()
	if err != nil {
		return "", fmt.Errorf("demo: sentinel %s: %w", r.sentinel.addr, err)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// node is the data node at addr.
func (r *ReplicaSet) node(addr string) (*redisProcess, error) {
	for _, n := range r.nodes {
		if n.addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("demo: the sentinel names %s, which the demo did not start", addr)
}

// other is the data node that is not n.
func (r *ReplicaSet) other(n *redisProcess) *redisProcess {
	if r.nodes[0] == n {
		return r.nodes[1]
	}
	return r.nodes[0]
}

// masterNode is the master the sentinel names now (its address and node) and the other
// data node, its replica.
func (r *ReplicaSet) masterNode(ctx context.Context) (master string, m, replica *redisProcess, err error) {
	if master, err = r.Master(ctx); err != nil {
		return "", nil, nil, err
	}
	if m, err = r.node(master); err != nil {
		return "", nil, nil, err
	}
	return master, m, r.other(m), nil
}

// StallReplication cuts the replica off its master's stream: the replica is frozen
// (SIGSTOP) and its link closed on the master (a frozen replica alone is not enough: its
// kernel keeps taking the stream into the socket's buffer). What the master acknowledges from
// now on exists on the master only. It returns the master's address.
func (r *ReplicaSet) StallReplication(ctx context.Context) (string, error) {
	master, _, replica, err := r.masterNode(ctx)
	if err != nil {
		return "", err
	}
	if !replica.proc.Running() {
		// A failover that failed after its kill left no replica (Heal brings it back):
		// killing this master would leave the set without one.
		return "", fmt.Errorf("demo: the replica %s of master %s is down: no failover without one", replica.addr, master)
	}
	_ = replica.proc.Signal(syscall.SIGSTOP)
	c := adminClient(master)
	defer c.Close()
	if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		_ = replica.proc.Signal(syscall.SIGCONT)
		return "", fmt.Errorf("demo: CLIENT KILL TYPE replica on %s: %w", master, err)
	}
	return master, nil
}

// KillMaster kills the stalled master (SIGKILL: its unreplicated writes are gone with it) and
// thaws the replica, which the sentinel then promotes.
func (r *ReplicaSet) KillMaster(master string) error {
	m, err := r.node(master)
	if err != nil {
		return err
	}
	m.kill()
	_ = r.other(m).proc.Signal(syscall.SIGCONT)
	return nil
}

// ForceFailover asks the sentinel to fail the master over now (SENTINEL FAILOVER) instead
// of after down-after-milliseconds: the outage of a sentinel that detects a death at once.
// Until the thawed replica has answered the sentinel again it is no candidate
// (NOGOODSLAVE): that is retried. A failover already in progress (INPROG) will do.
func (r *ReplicaSet) ForceFailover(ctx context.Context, timeout time.Duration) error {
	c := adminClient(r.sentinel.addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := c.Do(ctx, "SENTINEL", "FAILOVER", ReplicaMasterName).Err()
		if err == nil || strings.HasPrefix(err.Error(), "INPROG") {
			return nil
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return fmt.Errorf("demo: SENTINEL FAILOVER: %w", err)
		}
	}
}

// WaitPromoted waits until the sentinel names a master other than old and that node says
// role:master, so writes sent to it are accepted.
func (r *ReplicaSet) WaitPromoted(ctx context.Context, old string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "the sentinel still names " + old
	for {
		if addr, err := r.Master(ctx); err != nil {
			last = err.Error()
		} else if addr != old {
			role, err := roleOf(ctx, addr)
			if err == nil && role == "master" {
				return addr, nil
			}
			last = fmt.Sprintf("%s is named but says role %q (%v)", addr, role, err)
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return "", fmt.Errorf("demo: no replica promoted within %v after %s: %s", timeout, old, last)
		}
	}
}

// Rejoin restarts the killed node, empty, as a replica of the new master and waits until it
// is in sync: the set is ready for the next failover.
func (r *ReplicaSet) Rejoin(ctx context.Context, old, master string, timeout time.Duration) error {
	n, err := r.node(old)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.args = []string{"--replicaof", "127.0.0.1", portOf(master)}
	n.mu.Unlock()
	var last error
	// The port was ours a moment ago; a short retry covers a slow socket teardown.
	for range 20 {
		if last = r.launch(ctx, n, "node"+strconv.Itoa(r.index(n))); last == nil {
			return r.waitSynced(ctx, master, timeout)
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("demo: restart %s as a replica: %w", old, last)
}

// Heal restarts the data node that is down, if one is (a failover that failed after the
// kill: the sentinel did not promote in time, or the old master did not come back), as a
// replica of the master the sentinel names, and returns its address ("" when both run).
// Until the sentinel names a running master it does nothing: StallReplication then refuses.
func (r *ReplicaSet) Heal(ctx context.Context) (string, error) {
	master, m, down, err := r.masterNode(ctx)
	if err != nil {
		return "", err
	}
	if down.proc.Running() || !m.proc.Running() {
		return "", nil
	}
	return down.addr, r.Rejoin(ctx, down.addr, master, replicaTimeout)
}

func (r *ReplicaSet) index(n *redisProcess) int {
	if r.nodes[0] == n {
		return 0
	}
	return 1
}

// waitSynced waits until the master has a replica online that acknowledged its whole stream.
func (r *ReplicaSet) waitSynced(ctx context.Context, master string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		info, err := infoReplication(ctx, master)
		if err == nil && replicaInSync(info) {
			return nil
		}
		last = fmt.Sprint(err)
		if err == nil {
			last = "no replica in sync"
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("demo: replica of %s not in sync after %v: %s", master, timeout, last)
}

// waitSentinelReady waits until the sentinel knows the replica: without it, it cannot fail over.
func (r *ReplicaSet) waitSentinelReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := adminClient(r.sentinel.addr)
	defer c.Close()
	last := ""
	for time.Now().Before(deadline) {
		replicas, err := c.Do(ctx, "SENTINEL", "REPLICAS", ReplicaMasterName).Slice()
		if err == nil && len(replicas) == 1 {
			return nil
		}
		last = fmt.Sprintf("%d replicas known (%v)", len(replicas), err)
		if !sleepCtx(ctx, 50*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("demo: sentinel %s not ready after %v: %s", r.sentinel.addr, timeout, last)
}

func roleOf(ctx context.Context, addr string) (string, error) {
	info, err := infoReplication(ctx, addr)
	return infoField(info, "role"), err
}

func infoReplication(ctx context.Context, addr string) (string, error) {
	c := adminClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return c.Info(ctx, "replication").Result()
}

func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// replicaInSync reports whether a master's INFO replication lists a replica online that
// acknowledged the master's whole stream.
func replicaInSync(info string) bool {
	offset := infoField(info, "master_repl_offset")
	for line := range strings.SplitSeq(info, "\n") {
		// slave0:ip=127.0.0.1,port=1234,state=online,offset=42,lag=0
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") &&
			strings.Contains(line+",", ",offset="+offset+",") {
			return true
		}
	}
	return false
}
