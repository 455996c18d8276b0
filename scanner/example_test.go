package scanner_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

// The examples run in go test without a Redis server: each starts an in-process miniredis
// holding a few locks. Lines marked "// setup" do that; docs/scanner.md shows each example
// without them (internal/docs).

// New takes a connect.Target (what connect.Open makes of the command line's connection
// flags, or a literal as here); Census reads every lock key once.
func ExampleNew() {
	addr, stop := startWithLocks() // setup: an in-process Redis at addr holding four lock keys
	defer stop()                   // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr}) // e.g. 10.0.0.5:6379
	defer rdb.Close()
	s := scanner.New(connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{addr}},
		scanner.Options{}) // Pattern "lock:*", Count 1000, Interval 2s, HashCap 64, Retries 8, ScanBudget 2 %

	c, err := s.Census(ctx) // one full pass: c.Locks, c.Warnings, c.Missing, c.Scanned, c.Duration, c.FetchedAt
	if err != nil {
		fmt.Println(err) // errors.Is(err, scanner.ErrUnreachable), a *scanner.CommandError, ctx.Err()
		return
	}
	fmt.Println(len(c.Locks), "locks;", len(c.Missing), "servers missing")
	for _, l := range c.Locks { // in scan order; l.TTL and l.AcquiredAt too
		fmt.Printf("%s %s node=%q trace=%q reentry=%d fence=%t never-expires=%t\n",
			l.Key, l.Format, l.Node, l.Trace, l.Reentry, l.HasFence, l.NoExpiry)
	}

	l, err := s.Get(ctx, "lock:order:1001") // one key, read on every server of the target
	fmt.Println(l.Key, l.Node, err)
	_, err = s.Get(ctx, "lock:nobody")
	fmt.Println(errors.Is(err, scanner.ErrGone)) // it exists on no server
	// Output:
	// 4 locks; 0 servers missing
	// lock:batch lockscope node="worker-3" trace="" reentry=2 fence=true never-expires=false
	// lock:legacy uuid node="" trace="" reentry=0 fence=false never-expires=true
	// lock:order:1001 lockscope node="api-7" trace="req-42" reentry=0 fence=true never-expires=false
	// lock:queue not-a-lock node="" trace="" reentry=0 fence=false never-expires=true
	// lock:order:1001 api-7 <nil>
	// true
}

// Watch takes a census, streams it batch by batch, then follows changes (keyspace
// notifications, CLIENT TRACKING, locklib's events) and re-reads a changed key at once.
// miniredis has no CLIENT TRACKING, so it is followed by events only; a real server says
// "following tracking".
func ExampleScanner_Watch() {
	addr, stop := startWithLocks() // setup: an in-process Redis at addr holding four lock keys
	defer stop()                   // setup

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	s := scanner.New(connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{addr}},
		scanner.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	found := 0
	for u := range s.Watch(ctx) { // closes after ctx ends: keep reading until then
		switch u.Kind {
		case scanner.UpdateBatch: // locks of pass u.Gen as they are read (Gone: deleted since)
			found += len(u.Locks)
		case scanner.UpdatePassDone: // keys not seen in pass u.Gen are gone
			fmt.Println("pass", u.Gen, "found", found, "locks")
			cancel()
		case scanner.UpdateFollowing: // first: how changes are followed after the census
			fmt.Println("following", u.Following.Summary())
		case scanner.UpdateWarning: // e.g. no permission to read values, CLIENT TRACKING refused
		case scanner.UpdateRetrying, scanner.UpdateError:
			fmt.Println(u.Kind, u.Err)
		}
	}
	// Output:
	// following events
	// pass 1 found 4 locks
}

// startWithLocks starts an in-process miniredis holding four keys under lock:*: two
// locklib locks (one plain, one re-entered), a UUID token without expiry written by some
// other library, and a list; stop closes it.
func startWithLocks() (addr string, stop func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close()
	if _, err := c.Obtain(ctx, "lock:order:1001", time.Minute, locklib.WithTrace("req-42")); err != nil {
		panic(err)
	}
	w := locklib.New(rdb, locklib.WithNode("worker-3"))
	defer w.Close()
	for range 2 {
		if _, err := w.Obtain(ctx, "lock:batch", time.Minute, locklib.Reentrant("job-42")); err != nil {
			panic(err)
		}
	}
	if err := rdb.Set(ctx, "lock:legacy", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", 0).Err(); err != nil {
		panic(err)
	}
	if err := rdb.RPush(ctx, "lock:queue", "job-1").Err(); err != nil {
		panic(err)
	}
	return m.Addr(), m.Close
}
