package locklib_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// A read-write lock: readers hold together, a writer waits for them and then excludes
// everyone. A writer's Token is a fresh fencing token; a reader's is the last write's.
func ExampleClient_ObtainRead() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close()

	const key = "lock:doc:7"
	r1, err := c.ObtainRead(ctx, key, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	r2, err := c.ObtainRead(ctx, key, 10*time.Second, locklib.WithWatchdog())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("two readers, same read token:", r1.Token() == r2.Token())

	_, err = c.TryObtainWrite(ctx, key, 10*time.Second)
	fmt.Println("writer while reading, not obtained:", errors.Is(err, locklib.ErrNotObtained))

	r1.Release(ctx)
	r2.Release(ctx)
	w, err := c.ObtainWrite(ctx, key, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("writer, fresh token:", w.Token() > 0)
	w.Release(ctx)

	r3, err := c.ObtainRead(ctx, key, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r3.Release(ctx)
	fmt.Println("reader after the write reports its token:", r3.Token() == w.Token())
	// Output:
	// two readers, same read token: true
	// writer while reading, not obtained: true
	// writer, fresh token: true
	// reader after the write reports its token: true
}

// Downgrade: the owner that writes takes a read level (granted at once, Reentrant), then
// lets the write level go; other readers may join, writers wait. The other way round, an
// upgrade, is refused.
func ExampleClient_ObtainWrite_downgrade() {
	addr, stop := startRedis() // setup: an in-process Redis at addr
	defer stop()               // setup

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("api-7"))
	defer c.Close()

	const key = "lock:doc:8"
	job := locklib.Reentrant("rebuild-index")
	w, err := c.ObtainWrite(ctx, key, 10*time.Second, job)
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... write ...
	r, err := c.ObtainRead(ctx, key, 10*time.Second, job) // held at once: the owner writes
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Release(ctx)
	w.Release(ctx) // downgraded: still reading, no writer can get in in between

	other, err := c.TryObtainRead(ctx, key, 10*time.Second)
	fmt.Println("another reader joins:", err == nil)
	other.Release(ctx)

	_, err = c.ObtainWrite(ctx, key, 10*time.Second, job)
	fmt.Println("upgrade refused:", errors.Is(err, locklib.ErrUpgrade))
	// Output:
	// another reader joins: true
	// upgrade refused: true
}
