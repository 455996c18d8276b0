package scanner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// sink receives what a pass finds, as it finds it. Its functions are called concurrently.
type sink struct {
	// buffer returns where to decode the batch of n keys at position start of the pass
	// (positions count claimed keys from 0); nil means a fresh slice.
	buffer func(start, n int) []Lock
	// batch takes the decoded batch (empty records where keys vanished); an error (the
	// consumer left) stops the pass.
	batch func(start int, locks []Lock) error
	// expect gives, once, about how many keys the pass will claim (from DBSIZE and the
	// first SCAN page of every server), so a census can size its result before the reads.
	expect   func(n int)
	warn     func(string)
	retrying func(addr string, attempt int, in time.Duration, err error)
	// pace, when set, runs each step of the walk of server addr (a SCAN call, a batch of
	// reads): Watch's background re-scans keep to their budget through it.
	pace func(ctx context.Context, addr string, step func() error) error
}

// server is one Redis server: where SCAN runs, or where a key is read.
type server struct {
	addr string
	rdb  redis.Cmdable
}

// walk is one server's part of a pass: SCAN runs on src, keys are read on readers (src
// itself, through the cluster client for a cluster master, or all N Redlock instances).
// An independent server's keys are its own: its walk reads them on it alone.
type walk struct {
	src     server
	readers []server
	dbsize  int64 // DBSIZE of src at the start of the pass; 0 when unknown
}

// keyBatch is a batch of claimed keys and its position in the pass.
type keyBatch struct {
	start int
	keys  []string
}

// pass is one full walk of the target.
type pass struct {
	s       *Scanner
	out     sink
	fetched time.Time
	denied  denials

	scanned atomic.Int64

	mu       sync.Mutex
	seen     map[string]struct{} // keys already claimed in this pass (SCAN may repeat some)
	seenHint int                 // the size seen grows to once the first pages are claimed (0: grown)
	// repeatsLater: the consumer drops repeated keys itself once the pass is over (Census
	// with one server per key, see dropRepeats), so claiming keeps no set of every key.
	repeatsLater bool
	claimed      int              // keys claimed so far: the next batch's position
	missing      map[string]error // servers that could not be read, and why
	alive        map[string]bool  // servers that answered at least once in this pass
	warnings     []string
	warned       map[string]bool
	servers      int             // how many servers this pass tried to scan
	quiet        map[string]bool // warnings the consumer has already had (Watch: earlier passes)

	// Estimating the pass's key count (sink.expect): walks yet to report, and the sum (for
	// Redlock: the largest, every instance holds the same locks) of their estimates.
	unestimated int
	estimate    int64

	// discover: the SCAN also returns companion keys (see companions.go), recorded here by
	// the lock key they belong to, instead of asking for every lock's companions.
	discover bool
	fences   map[string]struct{}
	queues   map[string]struct{}
	// companions are the companion keys each batch reads with its locks: both unless the
	// SCAN discovers them, or the consumer does not want them (CensusEach: no wait queues).
	companions companionReads
}

// readsWaiters reports whether the pass counts waiters (CensusEach does not).
func (p *pass) readsWaiters() bool { return p.companions.queues || p.discover }

func (s *Scanner) newPass(out sink) *pass {
	p := &pass{s: s, fetched: time.Now(), seen: map[string]struct{}{}, missing: map[string]error{}, alive: map[string]bool{}, warned: map[string]bool{},
		companions: companionReads{fences: true, queues: true}}
	p.out = out
	p.out.warn = func(msg string) {
		p.mu.Lock()
		first := !p.warned[msg]
		if first {
			p.warned[msg] = true
			p.warnings = append(p.warnings, msg)
		}
		quiet := p.quiet[msg]
		p.mu.Unlock()
		if first && !quiet && out.warn != nil {
			out.warn(msg)
		}
	}
	return p
}

// suppress stops warnings in quiet from reaching the sink again (they still go into the
// census), so a watch does not repeat the same warning every pass.
func (p *pass) suppress(quiet map[string]bool) {
	p.mu.Lock()
	p.quiet = quiet
	p.mu.Unlock()
}

// run walks every server of the target and returns the pass summary (Locks not filled).
func (p *pass) run(ctx context.Context) (Census, error) {
	walks, err := p.walks(ctx)
	if err == nil {
		err = p.walkAll(ctx, walks)
	}
	return p.summary(ctx, err)
}

// walks lists the servers to scan: the standalone server, every Redlock instance, every
// independent server, or every master the cluster client knows now (a fresh topology each
// pass).
func (p *pass) walks(ctx context.Context) ([]walk, error) {
	switch p.s.target.Mode {
	case connect.Cluster:
		return p.clusterWalks(ctx)
	case connect.Redlock:
		all := p.s.servers()
		walks := make([]walk, len(all))
		for i, srv := range all {
			walks[i] = walk{src: srv, readers: all}
		}
		return walks, nil
	case connect.Independent:
		all := p.s.servers()
		walks := make([]walk, len(all))
		for i, srv := range all {
			walks[i] = walk{src: srv, readers: all[i : i+1]}
		}
		return walks, nil
	default:
		srv := p.s.servers()
		return []walk{{src: srv[0], readers: srv}}, nil
	}
}

func (p *pass) clusterWalks(ctx context.Context) ([]walk, error) {
	cc, ok := p.s.target.Clients[0].(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("scanner: cluster target needs a *redis.ClusterClient, got %T", p.s.target.Clients[0])
	}
	cc.ReloadState(ctx)
	var mu sync.Mutex
	var walks []walk
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		// Reads go through the cluster client: it follows MOVED/ASK during a resharding.
		addr := node.Options().Addr
		walks = append(walks, walk{src: server{addr: addr, rdb: node}, readers: []server{{addr: addr, rdb: cc}}})
		return nil
	})
	if err != nil && ctx.Err() == nil {
		// Not even the topology could be read: every seed address is missing.
		p.mu.Lock()
		p.servers = len(p.s.target.Addrs)
		p.mu.Unlock()
		for _, addr := range p.s.target.Addrs {
			p.markMissing(addr, err)
		}
		return nil, nil
	}
	sort.Slice(walks, func(i, j int) bool { return walks[i].src.addr < walks[j].src.addr })
	return walks, err
}

// walkAll runs the walks in parallel and tells the sink when every SCAN has ended.
func (p *pass) walkAll(ctx context.Context, walks []walk) error {
	hint := p.sizeHint(ctx, walks)
	p.mu.Lock()
	p.servers = len(walks)
	p.unestimated = len(walks)
	if !p.repeatsLater {
		p.seen, p.seenHint = make(map[string]struct{}, min(hint, seenFirst)), hint
	}
	p.mu.Unlock()
	var listing sync.WaitGroup
	listing.Add(len(walks))
	go func() {
		listing.Wait()
		p.mu.Lock()
		p.seen = nil // claiming is over: the set is garbage now
		p.mu.Unlock()
	}()
	g, gctx := errgroup.WithContext(ctx)
	for _, w := range walks {
		g.Go(func() error { return p.walk(gctx, w, listing.Done) })
	}
	return g.Wait()
}

// maxSizeHint bounds the pre-sizing of the claimed-keys set (about 40 MB): a keyspace
// full of other keys must not make a small census allocate for all of them.
const maxSizeHint = 1 << 20

// seenFirst is how many claimed keys the set holds before it grows to the pass's size hint:
// a set for a million keys made before the first SCAN held the first rows back (its
// allocation and the collection it set off); grown once after the first pages, it costs the
// same, later.
const seenFirst = 4096

// sizeHint reads every walk's DBSIZE (O(1) on the server) and sizes the set of claimed keys
// from it, so that a large census does not pay for growing the set step by step. It is only
// a hint: errors give 0.
func (p *pass) sizeHint(ctx context.Context, walks []walk) int {
	total := int64(0)
	for i := range walks {
		if n, err := walks[i].src.rdb.DBSize(ctx).Result(); err == nil {
			walks[i].dbsize = n
			total += n
		}
	}
	return int(min(total, maxSizeHint))
}

// maxEstimate bounds what sink.expect announces (and a census allocates up front: 2M
// records, 512 MB): a wrong estimate must not cost more than that. A larger census still
// works, its records beyond the estimate are copied in at the end.
const maxEstimate = 1 << 21

// noteFirstPage turns a walk's first SCAN page into an estimate of its key count: DBSIZE
// times the share of the page's keys that match, with a margin so that an estimate from a
// page of ~count keys does not fall short (a shortfall costs a copy, an excess only unused
// memory). A page that ends the SCAN is the exact count. Every walk reports once (an
// unreadable server reports 0); the last one hands the total to the sink.
func (p *pass) noteFirstPage(w walk, matched int, last bool) {
	estimate := int64(matched)
	if !last {
		count := int64(p.s.opts.Count)
		estimate = min(w.dbsize, w.dbsize*int64(matched)*5/(4*count)+count)
	}
	p.mu.Lock()
	if p.s.target.Mode == connect.Redlock {
		p.estimate = max(p.estimate, estimate)
	} else {
		p.estimate += estimate
	}
	p.unestimated--
	done, total := p.unestimated == 0, p.estimate
	p.mu.Unlock()
	if done && p.out.expect != nil {
		p.out.expect(int(min(total, maxEstimate)))
	}
}

// readersPerServer is how many batches of reads a walk keeps in flight on one server: with
// three, the server still has two queued while the client decodes the third, so on a busy
// machine a slow client turn does not leave the server idle.
const readersPerServer = 3

// walk scans one server while readersPerServer goroutines read the batches it finds, so the
// server always has the next SCAN and batches of reads queued: it, not the round trips,
// sets the pace. SCAN may run ahead of the reads. A server that stays unreachable after the
// retries is marked missing, not an error.
func (p *pass) walk(ctx context.Context, w walk, listed func()) error {
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan keyBatch, 1024)
	spare := make(chan []string, readersPerServer+1) // read batches' key slices, for reuse
	g.Go(func() error {
		defer listed()
		defer close(batches)
		return p.scanKeys(gctx, w, batches, spare)
	})
	for range readersPerServer {
		g.Go(func() error {
			kr := newReaders(w.readers)
			for b := range batches {
				if err := p.step(gctx, w.src.addr, func() error { return p.readBatch(gctx, b, w.readers, kr) }); err != nil {
					return err
				}
				select { // the records hold the key strings, not the slice
				case spare <- b.keys[:0]:
				default:
				}
			}
			return nil
		})
	}
	err := g.Wait()
	if err == nil && p.s.target.Mode == connect.Cluster {
		err = stillMaster(ctx, w.src)
	}
	if err != nil && ctx.Err() == nil && !isReply(err) {
		p.markMissing(w.src.addr, err)
		return nil
	}
	return err
}

// errDemoted: a cluster master became a replica while (or before) its keys were listed. A
// demoted master resyncs from the new one, emptying its dataset first, so its SCAN may have
// listed none or part of the keys it served: the census is partial, not complete.
var errDemoted = errors.New("no longer a master (a failover moved its slots during the census)")

// stillMaster asks a cluster master whether it is one after its walk: the pass took the
// topology from the client's slot map, which a promotion makes stale for a moment. A user
// the ACL does not allow INFO gets no answer (the check is then only the slot map's).
func stillMaster(ctx context.Context, src server) error {
	info, err := src.rdb.Info(ctx, "replication").Result()
	switch {
	case err != nil && isReply(err):
		return nil
	case err != nil:
		return err
	case !strings.Contains(info, "role:master"):
		return errDemoted
	}
	return nil
}

// readBatchKeys is how many keys SCAN pages (COUNT 1000 by default) are gathered into while
// the readers are busy: one pipeline of 5,000 keys costs the server and the client less per
// key than five of 1,000 (fewer round trips, reads and writes). Whenever no batch is queued,
// the keys found so far go out at once, so the first rows come after one SCAN page whatever
// the key count.
const readBatchKeys = 5000

// scanKeys walks w's server with SCAN and sends the keys, claimed, in batches of reads.
func (p *pass) scanKeys(ctx context.Context, w walk, batches chan<- keyBatch, spare chan []string) error {
	src := w.src
	pattern := p.s.opts.Pattern
	if p.discover {
		pattern = widenedPattern(pattern)
	}
	estimated := false
	defer func() {
		if !estimated {
			p.noteFirstPage(walk{}, 0, true) // the server could not be scanned
		}
	}()
	var pending []string // keys gathered for the next batch
	var cursor uint64
	// A SCAN cursor is good only on the server that gave it, and Sentinel's failover client
	// sends the next SCAN to the master it has just moved to without an error: the walk
	// went on there and ended "complete" without the keys the foreign cursor skipped. On a
	// Sentinel target the walk keeps to one connection, which a failover breaks (the
	// sentinels close a demoted master's clients, go-redis its connections to the old
	// master, a dead one by dying); the retry starts over from cursor 0 on a new one, and
	// claim drops the keys listed already.
	failover, _ := src.rdb.(*redis.Client)
	if p.s.target.Mode != connect.Sentinel {
		failover = nil
	}
	var conn *redis.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	scan := func(cursor uint64) ([]string, uint64, error) {
		if failover == nil {
			return src.rdb.Scan(ctx, cursor, pattern, int64(p.s.opts.Count)).Result()
		}
		if conn == nil {
			conn = failover.Conn()
		}
		keys, next, err := conn.Scan(ctx, cursor, pattern, int64(p.s.opts.Count)).Result()
		if err != nil { // a connection is unusable after an error: the next is maybe another server's
			_ = conn.Close()
			conn, next = nil, 0
		}
		return keys, next, err
	}
	for {
		var keys []string
		err := p.retry(ctx, src.addr, func() error {
			return p.step(ctx, src.addr, func() error {
				var err error
				keys, cursor, err = scan(cursor)
				return err
			})
		})
		if err != nil {
			if isReply(err) {
				return replyErr("SCAN", err)
			}
			return err
		}
		if p.discover {
			keys = p.sortOut(keys)
		} else {
			keys = dropCompanions(p.s.opts.Pattern, keys)
		}
		p.scanned.Add(int64(len(keys)))
		if !estimated {
			estimated = true
			p.noteFirstPage(w, len(keys), cursor == 0)
		}
		if pending == nil {
			select {
			case pending = <-spare:
			default:
				pending = make([]string, 0, readBatchKeys+p.s.opts.Count)
			}
		}
		pending = append(pending, keys...)
		if len(pending) < readBatchKeys && len(batches) > 0 && cursor != 0 {
			continue // the readers have work queued: gather a bigger batch
		}
		// Claimed as one batch: its keys get consecutive positions even while other
		// walks claim theirs.
		if b := p.claim(pending); len(b.keys) > 0 {
			pending = nil
			select {
			case batches <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			pending = pending[:0]
		}
		if cursor == 0 {
			return nil
		}
	}
}

// claim drops keys this pass has already claimed (SCAN may return a key twice, and in a
// Redlock pass every instance returns it) and gives the rest their position.
func (p *pass) claim(keys []string) keyBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.repeatsLater {
		b := keyBatch{start: p.claimed, keys: keys}
		p.claimed += len(keys)
		return b
	}
	if p.seenHint > seenFirst && len(p.seen)+len(keys) > seenFirst {
		grown := make(map[string]struct{}, p.seenHint)
		for k := range p.seen {
			grown[k] = struct{}{}
		}
		p.seen, p.seenHint = grown, 0
	}
	fresh := keys[:0]
	for _, k := range keys {
		if _, dup := p.seen[k]; !dup {
			p.seen[k] = struct{}{}
			fresh = append(fresh, k)
		}
	}
	b := keyBatch{start: p.claimed, keys: fresh}
	p.claimed += len(fresh)
	return b
}

// step runs one step of the walk of server addr, through the sink's pacer when it has one.
func (p *pass) step(ctx context.Context, addr string, f func() error) error {
	if p.out.pace == nil {
		return f()
	}
	return p.out.pace(ctx, addr, f)
}

// readBatch reads a batch on every reader, decodes it and hands it on.
func (p *pass) readBatch(ctx context.Context, b keyBatch, readers []server, kr keyReaders) error {
	var locks []Lock
	if p.out.buffer != nil {
		locks = p.out.buffer(b.start, len(b.keys))
	} else {
		locks = make([]Lock, len(b.keys))
	}
	if err := p.s.readLocks(ctx, b.keys, readers, kr, p, locks); err != nil {
		return err
	}
	dropPermits(p.s.opts.Pattern, locks)
	return p.out.batch(b.start, locks)
}

// summary is the pass's Census without Locks: counts, warnings, missing servers, and the
// error to return (ErrUnreachable when every server is missing).
func (p *pass) summary(ctx context.Context, err error) (Census, error) {
	c := Census{Scanned: int(p.scanned.Load()), Duration: time.Since(p.fetched), FetchedAt: p.fetched}
	p.mu.Lock()
	c.Warnings = append([]string(nil), p.warnings...)
	var why error
	for addr, err := range p.missing {
		c.Missing = append(c.Missing, addr)
		why = err
	}
	servers := p.servers
	p.mu.Unlock()
	sort.Strings(c.Missing)
	switch {
	case err != nil:
		return c, err
	case ctx.Err() != nil:
		return c, ctx.Err()
	case len(c.Missing) > 0 && len(c.Missing) >= servers:
		return c, fmt.Errorf("%w: %w", ErrUnreachable, why)
	}
	return c, nil
}

// claimedKeys is how many keys the pass claimed: the positions its batches span.
func (p *pass) claimedKeys() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claimed
}

func (p *pass) summaryWarnings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.warnings...)
}

func (p *pass) markMissing(addr string, err error) {
	p.mu.Lock()
	_, known := p.missing[addr]
	p.missing[addr] = err
	p.mu.Unlock()
	if !known {
		p.out.warn(fmt.Sprintf("%s unreachable, its locks are missing from this census: %v", addr, err))
	}
}

func (p *pass) isMissing(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.missing[addr]
	return ok
}
