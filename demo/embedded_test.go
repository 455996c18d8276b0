package demo

import (
	"context"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// TestEmbeddedTTLRunsOnTheClockThatStampsValues: on an embedded server a lock's TTL counts down
// on the clock its value is stamped with (TIME). A console reading it sees an age above 0 and a
// TTL within the lock's TTL: PTTL plus the age on the server's clock never exceeds the TTL
// (the FastForward ticker the demo had let TTLs lag TIME by a tick and more, so a 2 s lock read
// 2.1 s left while its age read 0 ms).
func TestEmbeddedTTLRunsOnTheClockThatStampsValues(t *testing.T) {
	e, err := StartEmbedded(1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	rdb := redis.NewClient(embeddedClientOptions(e.Addrs()[0]))
	defer rdb.Close()
	c := locklib.New(rdb, locklib.WithNode("demo-w1"))
	defer c.Close()
	const ttl = 2 * time.Second
	const key = "lock:demo:clock"
	l, err := c.Obtain(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	v, err := protocol.ParseValue(rdb.Get(ctx, key).Val())
	if err != nil {
		t.Fatal(err)
	}
	// Stamps and TIME have millisecond precision: a few ms of rounding, no more.
	const slack = 5 * time.Millisecond
	var age time.Duration
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(7 * time.Millisecond) {
		// TIME before PTTL: a delay between the two (a loaded machine) can only make the sum
		// smaller; the other way round it made it look as if the TTL lagged.
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		left, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		age = now.Sub(v.AcquiredAt)
		if age < 0 || left > ttl || left+age > ttl+slack {
			t.Fatalf("PTTL %v and age %v (on the server's TIME) of a %v lock: the TTL lags the clock", left, age, ttl)
		}
	}
	if age < 900*time.Millisecond {
		t.Errorf("age %v after a second", age)
	}
}
