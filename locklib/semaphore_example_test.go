package locklib_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// A lease semaphore lets at most N holders in at once. Each permit is a Lock of its own:
// its own TTL (a worker that crashes gives its permit back when its TTL runs out), watchdog,
// Lost() and fencing token. Resize changes N for every Client at runtime.
func ExampleClient_Semaphore() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close()

	pool := c.Semaphore("lock:pool:db", 2) // 2 permits, until a Resize says otherwise
	var permits []*locklib.Lock
	defer func() {
		for _, p := range permits {
			p.Release(ctx)
		}
	}()
	for range 2 {
		p, err := pool.Acquire(ctx, 30*time.Second, locklib.WithWatchdog()) // waits, in arrival order
		if err != nil {
			fmt.Println(err) // ErrNotObtained (+ ctx.Err()), ErrBackend, ErrInvalid
			return
		}
		permits = append(permits, p)
	}
	if _, err := pool.TryAcquire(ctx, 30*time.Second); errors.Is(err, locklib.ErrNotObtained) {
		fmt.Println("no permit free")
	}
	st, _ := pool.Status(ctx)
	fmt.Printf("%d of %d permits out; tokens increase: %v\n", st.InUse, st.Limit, permits[1].Token() > permits[0].Token())

	if err := pool.Resize(ctx, 3); err != nil { // a waiting Acquire would be granted now
		fmt.Println(err)
		return
	}
	p, err := pool.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	permits = append(permits, p)
	st, _ = pool.Status(ctx)
	fmt.Printf("%d of %d permits out\n", st.InUse, st.Limit)
	// Output:
	// no permit free
	// 2 of 2 permits out; tokens increase: true
	// 3 of 3 permits out
}
