package locklib_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// The examples run in go test without a Redis server: each starts an in-process miniredis.
// Lines marked "// setup" do that; the docs show each example without them
// (internal/docs).

// Example is the README's snippet: take a lock with a watchdog, do the work while watching
// Lost(), pass the fencing token to the protected resource.
func Example() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr}) // any go-redis v9 UniversalClient
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close()

	l, err := c.Obtain(ctx, "lock:order:1001", 30*time.Second,
		locklib.WithTrace("req-42"), locklib.WithWatchdog())
	if err != nil {
		fmt.Println(err) // errors.Is: ErrNotObtained (+ ctx.Err()), ErrBackend, ErrInvalid
		return
	}
	defer l.Release(ctx) // owner-checked; works even after ctx was cancelled

	done := make(chan error, 1)
	go func() { done <- shipOrder(ctx, "1001", l.Token()) }() // the fencing token: storage rejects lower ones
	select {
	case <-l.Lost(): // renewal refused or validity passed: stop touching the resource
		fmt.Println("lost:", l.Err())
	case err := <-done:
		fmt.Println("shipped, error:", err)
	}
	// Output: shipped, error: <nil>
}

// Obtain waits until the lock is free, the context ends or Redis fails. Switch on the error,
// and return on every one: a failed Obtain returns a nil Lock.
func ExampleClient_Obtain() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close() // stops the client's shared wake-up subscription

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.Obtain(ctx, "lock:order:1001", 30*time.Second,
		locklib.WithTrace("req-42"), locklib.WithWatchdog())
	switch {
	case errors.Is(err, locklib.ErrNotObtained): // ctx ended first; err wraps ctx.Err() too
		fmt.Println("gave up waiting:", err)
		return
	case errors.Is(err, locklib.ErrBackend): // Redis unreachable, ...; the cause stays reachable
		fmt.Println("Redis trouble:", err)
		return
	case err != nil: // ErrInvalid: empty key, ttl < 1ms, Reentrant(""), a bad cluster key
		fmt.Println(err)
		return
	}
	defer l.Release(ctx) // works even if ctx is cancelled by then

	fmt.Println("holding", l.Key())
	// Output: holding lock:order:1001
}

// A waiting Obtain takes the lock when its holder releases it, and gives up when its context
// ends first; the error then says so in one line and wraps the context's error.
func ExampleClient_Obtain_wait() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()

	holder, err := c.Obtain(ctx, "lock:invoice:77", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	time.AfterFunc(50*time.Millisecond, func() { _ = holder.Release(ctx) })
	l, err := c.Obtain(ctx, "lock:invoice:77", 10*time.Second) // waits for the release
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("obtained after the release")

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Obtain(short, "lock:invoice:77", 10*time.Second) // l still holds it
	fmt.Println(err)
	fmt.Println(errors.Is(err, locklib.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// obtained after the release
	// locklib: lock not obtained: "lock:invoice:77": context deadline exceeded
	// true true
}

// TryObtain makes one attempt and does not wait.
func ExampleClient_TryObtain() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()

	report, err := c.TryObtain(ctx, "lock:report:daily", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer report.Release(ctx)

	// Another run of the job finds it taken and skips this round.
	if _, err := c.TryObtain(ctx, "lock:report:daily", 10*time.Second); errors.Is(err, locklib.ErrNotObtained) {
		fmt.Println("skipped:", err)
	}
	// Output: skipped: locklib: lock not obtained: "lock:report:daily" is held (ttl 10s, 0 waiting)
}

// Lost closes when the lock is gone: here an operator deleted the key, so the watchdog's next
// renewal is refused. Stop touching the protected resource then; Err says why.
func ExampleLock_Lost() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()

	l, err := c.Obtain(ctx, "lock:sync", 1500*time.Millisecond, locklib.WithWatchdog()) // renewed every 500 ms
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)

	rdb.Del(ctx, "lock:sync") // someone else removes the lock (lockscope release, say)
	select {
	case <-l.Lost():
		fmt.Println(l.Err())
		fmt.Println("not held:", errors.Is(l.Err(), locklib.ErrNotHeld))
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	// Output:
	// locklib: lock lost: locklib: lock not held: "lock:sync" is gone or held by another owner
	// not held: true
}

// Token is a fencing token: the protected resource remembers the highest token it has seen
// and refuses a write with a lower one, so a holder that paused past its lock's expiry
// cannot overwrite the work of the next holder.
func ExampleLock_Token() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()
	var account fencedStore // the protected resource

	first, err := c.Obtain(ctx, "lock:account:9", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := first.Release(ctx); err != nil { // its lock ends (here: released; or it expired)
		fmt.Println(err)
		return
	}
	second, err := c.Obtain(ctx, "lock:account:9", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Release(ctx)

	fmt.Println(account.write(second.Token(), "balance=70"))
	fmt.Println(account.write(first.Token(), "balance=100")) // the first holder, too late
	// Output:
	// <nil>
	// stale fencing token: a later holder has written
}

// A re-entrant lock can be obtained again by its owner, for code that takes the same lock
// at several levels of a call chain. Name the owner at every Obtain; each Obtain returns its
// own Lock, and the key is deleted with the last Release.
func ExampleReentrant() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()

	outer, err := c.Obtain(ctx, "lock:batch", 10*time.Second, locklib.Reentrant("job-42"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer outer.Release(ctx)

	inner, err := c.Obtain(ctx, "lock:batch", 10*time.Second, locklib.Reentrant("job-42")) // enters again
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("entered twice, same token:", inner.Token() == outer.Token())

	_, err = c.TryObtain(ctx, "lock:batch", 10*time.Second, locklib.Reentrant("job-7"))
	fmt.Println("another owner:", errors.Is(err, locklib.ErrNotObtained))
	_, err = c.Obtain(ctx, "lock:batch", 10*time.Second, locklib.Reentrant(""))
	fmt.Println(err)

	if err := inner.Release(ctx); err != nil { // one level down; outer still holds it
		fmt.Println(err)
	}
	// Output:
	// entered twice, same token: true
	// another owner: true
	// locklib: invalid argument: "lock:batch": a re-entrant lock needs an owner: locklib.Reentrant(owner)
}

// ObtainMulti takes several keys at once, or none: here an order's payment and its stock,
// hash-tagged so that they share a Redis Cluster slot. One token fences every key, and a
// single-key Obtain on any of them waits until the whole set is released.
func ExampleClient_ObtainMulti() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb)
	defer c.Close()
	ctx := context.Background()

	keys := []string{"lock:{order-1001}:payment", "lock:{order-1001}:stock"}
	l, err := c.ObtainMulti(ctx, keys, 10*time.Second, locklib.WithWatchdog())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", l.Keys())

	_, err = c.TryObtain(ctx, "lock:{order-1001}:stock", 10*time.Second)
	fmt.Println("stock alone:", errors.Is(err, locklib.ErrNotObtained))
	_, err = c.TryObtainMulti(ctx, []string{"lock:{order-1001}:stock", "lock:{order-1001}:invoice"}, 10*time.Second)
	fmt.Println("an overlapping set:", errors.Is(err, locklib.ErrNotObtained))

	if err := l.Release(ctx); err != nil { // every key at once
		fmt.Println(err)
	}
	next, err := c.TryObtain(ctx, "lock:{order-1001}:stock", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Release(ctx)
	fmt.Println("stock after the release, a later token:", next.Token() > l.Token())
	// Output:
	// holding [lock:{order-1001}:payment lock:{order-1001}:stock]
	// stock alone: true
	// an overlapping set: true
	// stock after the release, a later token: true
}

// ExampleWithReplicas waits, after each acquisition and renewal, until a replica of the
// master has the lock. miniredis has no replicas (its WAIT answers 0), so here the Obtain
// fails: the lock is released again, and the error says how many replicas confirmed.
func ExampleWithReplicas() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	ctx := context.Background()
	// A *redis.Client (one server, or Sentinel's redis.NewFailoverClient) or a *redis.ClusterClient.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithReplicas(1, 50*time.Millisecond))
	defer c.Close()

	l, err := c.Obtain(ctx, "lock:ledger", 10*time.Second)
	var re *locklib.ReplicationError
	switch {
	case errors.As(err, &re): // errors.Is(err, locklib.ErrNotObtained) and ErrNotReplicated too
		fmt.Printf("%s: %d of %d replicas confirmed within %v\n", re.Key, re.Acked, re.Wanted, re.Timeout)
	case err != nil:
		fmt.Println(err)
	default:
		defer l.Release(ctx)
		fmt.Println("held, and on a replica: token", l.Token() > 0)
	}
	// Output:
	// lock:ledger: 0 of 1 replicas confirmed within 50ms
}

// NewRedlock gives the same Client over N independent Redis servers: a lock is held when a
// majority of them took it in time. There is no fencing token (Token is 0): protect the
// resource with a compare-and-set on Lock.Value instead (docs/redlock.md).
func ExampleNewRedlock() {
	addrs, stop := startRedisServers(3) // setup: 3 in-process Redis servers
	defer stop()                        // setup

	var clients []redis.UniversalClient
	for _, addr := range addrs { // e.g. redis-a:6379, redis-b:6379, redis-c:6379
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close() // the clients are the caller's: Client.Close leaves them open
		clients = append(clients, rdb)
	}
	c, err := locklib.NewRedlock(clients, locklib.WithNode("api-7"), locklib.WithInstanceTimeout(time.Second))
	if err != nil {
		fmt.Println(err) // ErrInvalid: no clients, a nil client, a bad WithDrift
		return
	}
	defer c.Close()
	ctx := context.Background()

	l, err := c.Obtain(ctx, "lock:invoice:77", 30*time.Second, locklib.WithWatchdog())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)

	select {
	case <-l.Lost(): // a quorum renewal failed in time: stop touching the resource
		fmt.Println("lost:", l.Err())
	default:
		fmt.Println("held on a quorum of", len(clients), "servers; token", l.Token())
	}
	// Output: held on a quorum of 3 servers; token 0
}

// startRedis starts an in-process miniredis for an example; stop closes it.
func startRedis() (addr string, stop func()) {
	addrs, stop := startRedisServers(1)
	return addrs[0], stop
}

// startRedisServers starts n in-process miniredis servers for an example; stop closes them.
func startRedisServers(n int) (addrs []string, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		m, err := miniredis.Run()
		if err != nil {
			panic(err)
		}
		servers = append(servers, m)
		addrs = append(addrs, m.Addr())
	}
	return addrs, func() {
		for _, m := range servers {
			m.Close()
		}
	}
}

// shipOrder stands for the work done under a lock, at a store that checks the token.
func shipOrder(ctx context.Context, order string, token int64) error { return ctx.Err() }

// fencedStore stands for a resource protected by fencing tokens: it refuses a write whose
// token is below the highest it has accepted.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	data    string
}

func (s *fencedStore) write(token int64, data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errors.New("stale fencing token: a later holder has written")
	}
	s.highest, s.data = token, data
	return nil
}
