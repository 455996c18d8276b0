package demo

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietLogger drops go-redis's log lines: failed dials are what the failover tests provoke.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Every goroutine the demo starts (workers, faults, watchdogs, clients, embedded servers)
// must be gone once Stop and the tests' cleanups have run.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	// After failed dials (a failover's stopped instance) go-redis retries in a goroutine that
	// sleeps a second between attempts and notices its pool closed only when it wakes.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
