// Package contend is a contention harness for tests: several locklib Clients fight over a few
// keys on a real Redis deployment (internal/redistest) while one fault hits it, and every
// holder writes to a protected resource that checks fencing tokens. Run measures one
// deployment × fault cell of the table in docs/guarantees.md ("Faults and deployments: what
// was measured"); TestGuaranteesMatrix runs the cells and writes the table.
package contend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// Deployment is how the Redis behind the locks is run.
type Deployment string

// The deployments of the table.
const (
	Single   Deployment = "single"   // one redis-server
	Sentinel Deployment = "sentinel" // a master, 2 replicas, 3 sentinels; go-redis's failover client
	Cluster  Deployment = "cluster"  // 3 masters with one replica each
	Redlock  Deployment = "redlock"  // 3 independent servers, locklib.NewRedlock
)

// Fault is what happens to the deployment (or to a holder) in the middle of a run.
type Fault string

// The faults of the table.
const (
	Kill         Fault = "kill"          // SIGKILL the server (the master); it comes back empty
	ServerPause  Fault = "server-pause"  // SIGSTOP the server (the master) for 2 x ttl
	HolderPause  Fault = "holder-pause"  // a holder stops for 2 x ttl between its Lost() check and its write
	NetDelay     Fault = "delay"         // every connection of the clients delayed ttl/4 per chunk, for 2 x ttl
	Failover     Fault = "failover"      // the master dies with its replicas behind; SENTINEL FAILOVER, CLUSTER FAILOVER FORCE
	RestartEmpty Fault = "restart-empty" // restart the server (the master) at once, without its data
)

// Deployments and Faults are the rows and columns of the table, in its order.
var (
	Deployments = []Deployment{Single, Sentinel, Cluster, Redlock}
	Faults      = []Fault{Kill, ServerPause, HolderPause, NetDelay, Failover, RestartEmpty}
)

// Applies tells whether f means something on d: a failover needs replicas.
func Applies(d Deployment, f Fault) bool {
	return f != Failover || d == Sentinel || d == Cluster
}

// The run's shape. The ttl is above the two to four seconds a promotion takes, so that a lock
// can outlive a failover, as production ttls do.
const (
	ttl       = 3 * time.Second
	clients   = 6
	writeGap  = 50 * time.Millisecond // between two writes of a section
	maxWrites = 30                    // a section is 2 to 30 writes: up to 1.5 s
	warmUp    = time.Second           // contention before the fault
	// replicationLag is how long a failover's replicas are held behind their master before it
	// dies (below the sentinels' and the cluster's 1 s timeouts, so they stay eligible): the
	// locks taken and renewed meanwhile are what asynchronous replication loses.
	replicationLag = 700 * time.Millisecond
	settle         = ttl // contention after the fault: a lock from before it has run out
	// promoteWait bounds each wait of a Sentinel or cluster fault for a promotion or a resync.
	promoteWait = 30 * time.Second
)

// keys share a hash tag, so that on the cluster one master serves them all and its faults hit
// every lock.
var keys = []string{"lock:{matrix}:a", "lock:{matrix}:b"}

// Result is one cell: what the holders saw while the fault hit.
type Result struct {
	Deployment Deployment
	Fault      Fault
	// Fenced: the resource checked fencing tokens; false on Redlock (Token() is 0), where
	// it compares the holder's lock value with the one that began last (compare-and-set).
	Fenced bool
	// Sections is how many holders began a critical section.
	Sections int
	// Overlaps counts pairs of holders of one key whose sections overlapped: what a resource
	// without fencing would have let both write through.
	Overlaps int
	// StaleRejected counts writes the resource refused from a holder that a later holder of
	// the key had superseded; StaleAccepted those it accepted (must be 0).
	StaleRejected, StaleAccepted int
	// CurrentRefused counts refused writes of the newest holder of a key, and Regressions
	// begins whose token was not above the previous holder's: both 0 while tokens increase.
	CurrentRefused, Regressions int
	// Lost counts holders whose lock was gone while they held it: Lost() closed during the
	// section, or at its end the key no longer held the holder's value (stillHeld).
	Lost int
	// Did says what the fault did, as the harness saw it (e.g. which node was promoted).
	Did string
	// TokenOrder says, per key, what porcupine found wrong with the fencing tokens of the
	// acquisitions (tokenModel): empty when some order that real time allows has them
	// increasing. Not checked on Redlock, which has no token.
	TokenOrder []string
}

// Run starts d, lets the clients contend for warmUp, injects f, lets them contend settle
// longer and returns what the resource and the holders recorded. It calls tb.Fatal when the
// deployment or the fault cannot be set up.
func Run(tb testing.TB, d Deployment, f Fault) Result {
	tb.Helper()
	pn := &proxyNet{tb: tb, proxies: map[string]*redistest.Proxy{}}
	dep := start(tb, d, pn)
	res := newResource(d != Redlock)
	h := &harness{res: res, obtains: &obtainLog{start: time.Now()}}

	var lcs []*locklib.Client
	for i := range clients {
		c, err := dep.client(fmt.Sprintf("c%d", i))
		if err != nil {
			tb.Fatal(err)
		}
		lcs = append(lcs, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, c := range lcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.contend(ctx, c, uint64(i))
		}()
	}
	time.Sleep(warmUp)
	var did string
	var err error
	if f == HolderPause {
		did, err = h.pauseAHolder()
	} else {
		did, err = dep.inject(f)
	}
	if err != nil {
		tb.Errorf("%s × %s: %v", d, f, err)
	}
	time.Sleep(settle)
	cancel()
	wg.Wait()
	for _, c := range lcs {
		_ = c.Close()
	}
	dep.close()

	res.mu.Lock()
	r := Result{Deployment: d, Fault: f, Fenced: res.fenced, Sections: len(res.holders),
		StaleRejected: res.staleRejected, StaleAccepted: res.staleAccepted,
		CurrentRefused: res.currentRefused, Regressions: res.regressions, Did: did}
	res.mu.Unlock()
	r.Overlaps = res.overlaps()
	r.Lost = int(h.lost.Load())
	if r.Fenced {
		r.TokenOrder = h.obtains.tokenOrderViolations()
	}
	return r
}

// harness runs the holders.
type harness struct {
	res     *resource
	obtains *obtainLog
	lost    atomic.Int64
	pause   atomic.Bool   // the next holder to obtain a lock pauses
	paused  chan struct{} // closed when that holder is back
}

// pauseAHolder makes the next holder stop for 2 x ttl in its section, after it checked Lost()
// and before it writes (a GC pause, a frozen VM), and waits until it is back.
func (h *harness) pauseAHolder() (string, error) {
	h.paused = make(chan struct{})
	h.pause.Store(true)
	select {
	case <-h.paused:
		return fmt.Sprintf("a holder stopped %v after its Lost() check, then wrote", 2*ttl), nil
	case <-time.After(4*ttl + 10*time.Second):
		return "", errors.New("no holder took the pause")
	}
}

// contend obtains a random key, runs a section of writes and releases, until ctx ends.
func (h *harness) contend(ctx context.Context, c *locklib.Client, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	for ctx.Err() == nil {
		key := keys[rng.IntN(len(keys))]
		// The holder that pauses has no watchdog: a paused process renews nothing either.
		victim := h.pause.CompareAndSwap(true, false)
		opts := []locklib.LockOption{locklib.WithWatchdog()}
		if victim {
			opts = nil
		}
		octx, cancelObtain := context.WithTimeout(ctx, 2*ttl)
		call := h.obtains.since()
		l, err := c.Obtain(octx, key, ttl, opts...)
		cancelObtain()
		if err == nil {
			h.obtains.add(obtained{key: key, token: l.Token(), call: call, ret: h.obtains.since()})
		}
		if err != nil {
			if victim {
				h.pause.Store(true) // the next one then
			}
			time.Sleep(writeGap) // a backend down answers at once: do not spin
			continue
		}
		h.section(l, victim, 2+rng.IntN(maxWrites-1))
		if victim {
			close(h.paused)
		}
	}
}

func (h *harness) section(l *locklib.Lock, victim bool, writes int) {
	lost := false
	hd, ok := h.res.begin(l.Key(), l.Token(), l.Value())
	for i := 1; ok && i < writes; i++ {
		time.Sleep(writeGap)
		select {
		case <-l.Lost():
			lost = true
		default:
		}
		if lost {
			break
		}
		if victim && i == 1 {
			time.Sleep(2 * ttl)
		}
		ok = h.res.write(hd)
	}
	if lost || !stillHeld(l) {
		h.lost.Add(1)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = l.Release(rctx) // a lost lock answers ErrNotHeld, a server down ErrBackend: counted above
	cancel()
}

// stillHeld asks Redis whether the key still holds l's value at the end of its section, until
// an answer comes or Lost() closes (the validity ran out with Redis unreachable, so the
// holder cannot count on the lock): a section that ended while the server was down or a
// failover was under way is counted by what became of its lock, not by its Release's error.
func stillHeld(l *locklib.Lock) bool {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), ttl/2)
		left, err := l.TTL(ctx)
		cancel()
		if err == nil {
			return left > 0
		}
		select {
		case <-l.Lost():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deployment is a started deployment: clients for it, and its faults.
type deployment struct {
	client func(node string) (*locklib.Client, error)
	inject func(Fault) (string, error)
	close  func() // closes the go-redis clients
}

func start(tb testing.TB, d Deployment, pn *proxyNet) deployment {
	tb.Helper()
	var rdbs []redis.UniversalClient
	keep := func(c redis.UniversalClient) redis.UniversalClient { rdbs = append(rdbs, c); return c }
	closeAll := func() {
		for _, c := range rdbs {
			_ = c.Close()
		}
	}
	switch d {
	case Single:
		s := redistest.Start(tb)
		return deployment{
			client: func(node string) (*locklib.Client, error) {
				rdb := keep(redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, Dialer: pn.dial}))
				return locklib.New(rdb, locklib.WithNode(node)), nil
			},
			inject: func(f Fault) (string, error) { return serverFault(tb, s, f, pn) },
			close:  closeAll,
		}
	case Redlock:
		ss := redistest.StartN(tb, 3)
		return deployment{
			client: func(node string) (*locklib.Client, error) {
				var cs []redis.UniversalClient
				for _, s := range ss {
					cs = append(cs, keep(redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, Dialer: pn.dial})))
				}
				return locklib.NewRedlock(cs, locklib.WithNode(node))
			},
			// A fault hits one instance of three, a minority; a network delay hits the
			// connections to all three.
			inject: func(f Fault) (string, error) {
				did, err := serverFault(tb, ss[0], f, pn)
				if f == NetDelay {
					return "all 3 instances: " + did, err
				}
				return "instance 1 of 3: " + did, err
			},
			close: closeAll,
		}
	case Sentinel:
		r := redistest.StartReplicated(tb, 2, 3)
		return deployment{
			client: func(node string) (*locklib.Client, error) {
				rdb := keep(redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.MasterName,
					SentinelAddrs: r.SentinelAddrs, DialTimeout: time.Second, Dialer: pn.dial}))
				return locklib.New(rdb, locklib.WithNode(node)), nil
			},
			inject: func(f Fault) (string, error) { return sentinelFault(tb, r, f, pn) },
			close:  closeAll,
		}
	case Cluster:
		cl := redistest.StartCluster(tb, 3, redistest.ClusterReplicas(1))
		return deployment{
			client: func(node string) (*locklib.Client, error) {
				// go-redis reloads its slot map every ClusterStateReloadInterval only (60 s by
				// default), not when a master stops answering.
				rdb := keep(redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, DialTimeout: time.Second,
					Dialer: pn.dial, ClusterStateReloadInterval: 500 * time.Millisecond}))
				return locklib.New(rdb, locklib.WithNode(node)), nil
			},
			inject: func(f Fault) (string, error) { return clusterFault(tb, cl, f, pn) },
			close:  closeAll,
		}
	}
	tb.Fatalf("contend: unknown deployment %q", d)
	return deployment{}
}

// serverFault hits one independent server (single, or one Redlock instance).
func serverFault(tb testing.TB, s *redistest.Server, f Fault, pn *proxyNet) (string, error) {
	tb.Helper()
	switch f {
	case Kill:
		// docs/redlock.md: an instance without persistence comes back only after the ttl.
		s.Kill()
		time.Sleep(ttl)
		s.Restart()
		return fmt.Sprintf("killed, restarted empty %v later", ttl), nil
	case ServerPause:
		s.Pause()
		time.Sleep(2 * ttl)
		s.Resume()
		return fmt.Sprintf("SIGSTOP for %v", 2*ttl), nil
	case NetDelay:
		return pn.delayFor(ttl/4, 2*ttl), nil
	case RestartEmpty:
		s.Restart()
		return "restarted empty at once", nil
	}
	return "", fmt.Errorf("contend: %s does not apply to an independent server", f)
}

func sentinelFault(tb testing.TB, r *redistest.Replicated, f Fault, pn *proxyNet) (string, error) {
	tb.Helper()
	began := time.Now()
	switch f {
	case Kill:
		old, _, err := r.KillMaster(promoteWait)
		if err != nil {
			return "", err
		}
		did := fmt.Sprintf("master killed, replica promoted after %v", since(began))
		return did, r.Rejoin(old, promoteWait)
	case ServerPause:
		did, err := pauseMaster(r.Master)
		if err != nil {
			return "", err
		}
		return did, r.WaitSynced(promoteWait)
	case NetDelay:
		return pn.delayFor(ttl/4, 2*ttl), nil
	case Failover:
		old, err := r.Master()
		if err != nil {
			return "", err
		}
		resume, err := r.StallReplication()
		if err != nil {
			return "", err
		}
		killBehind(old, resume)
		if _, err := r.Failover(promoteWait); err != nil {
			return "", err
		}
		return fmt.Sprintf("replicas held %v behind, master killed, SENTINEL FAILOVER: replica promoted after %v",
			replicationLag, since(began)), nil
	case RestartEmpty:
		m, err := r.Master()
		if err != nil {
			return "", err
		}
		m.Restart()
		return "master restarted empty at once (the replicas resync from it)", r.WaitSynced(promoteWait)
	}
	return "", fmt.Errorf("contend: unknown fault %q", f)
}

func clusterFault(tb testing.TB, cl *redistest.Cluster, f Fault, pn *proxyNet) (string, error) {
	tb.Helper()
	began := time.Now()
	switch f {
	case Kill:
		old, _, err := cl.KillMaster(keys[0], promoteWait)
		if err != nil {
			return "", err
		}
		did := fmt.Sprintf("master killed, replica promoted after %v", since(began))
		// It comes back empty with its cluster identity and joins as a replica.
		old.Restart()
		return did + "; the old master restarted empty", nil
	case ServerPause:
		return pauseMaster(func() (*redistest.Server, error) {
			m, _, err := cl.MasterOf(keys[0])
			return m, err
		})
	case NetDelay:
		return pn.delayFor(ttl/4, 2*ttl), nil
	case Failover:
		old, replicas, resume, err := cl.StallReplication(keys[0])
		if err != nil {
			return "", err
		}
		killBehind(old, resume)
		if err := cl.FailoverForce(replicas[0], promoteWait); err != nil {
			return "", err
		}
		did := fmt.Sprintf("replicas held %v behind, master killed, CLUSTER FAILOVER FORCE: replica master after %v",
			replicationLag, since(began))
		old.Restart()
		return did + "; the old master restarted empty", nil
	case RestartEmpty:
		m, _, err := cl.MasterOf(keys[0])
		if err != nil {
			return "", err
		}
		m.Restart()
		return "master restarted empty at once", nil
	}
	return "", fmt.Errorf("contend: unknown fault %q", f)
}

// killBehind lets the master old take writes for replicationLag that its stalled replicas
// (resume thaws them) do not get, then kills it.
func killBehind(old *redistest.Server, resume func()) {
	time.Sleep(replicationLag)
	old.Kill()
	resume()
}

// since is how long ago began was, as the faults report it.
func since(began time.Time) time.Duration { return time.Since(began).Round(100 * time.Millisecond) }

// pauseMaster freezes the master that master names (SIGSTOP) for 2·ttl, and says whether a
// replica was promoted meanwhile.
func pauseMaster(master func() (*redistest.Server, error)) (string, error) {
	m, err := master()
	if err != nil {
		return "", err
	}
	m.Pause()
	time.Sleep(2 * ttl)
	m.Resume()
	did := fmt.Sprintf("master SIGSTOP for %v", 2*ttl)
	if now, err := master(); err == nil && now != m {
		did += ", a replica was promoted meanwhile"
	}
	return did, nil
}

// proxyNet sends every connection of the clients through a redistest.Proxy in front of its
// target (made when first dialed: sentinels name masters, clusters name nodes), so that a
// network delay reaches them all.
type proxyNet struct {
	tb      testing.TB
	mu      sync.Mutex
	proxies map[string]*redistest.Proxy
	delay   time.Duration
}

func (pn *proxyNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	pn.mu.Lock()
	p := pn.proxies[addr]
	if p == nil {
		p = redistest.NewProxy(pn.tb, addr)
		p.SetDelay(pn.delay)
		pn.proxies[addr] = p
	}
	pn.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, p.Addr)
}

func (pn *proxyNet) setDelay(d time.Duration) {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	pn.delay = d
	for _, p := range pn.proxies {
		p.SetDelay(d)
	}
}

// delayFor delays every chunk both ways by d for a while.
func (pn *proxyNet) delayFor(d, span time.Duration) string {
	pn.setDelay(d)
	time.Sleep(span)
	pn.setDelay(0)
	return fmt.Sprintf("%v on every chunk, both ways, for %v", d, span)
}
