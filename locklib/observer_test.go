package locklib

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

type spanKey struct{}

// spanRecorder is a Tracer that marks each call's context with the call's name, and
// records how each call ended; ran, a redistest.RequestHook, records which call's context
// every request ran under.
type spanRecorder struct {
	mu       sync.Mutex
	ended    []string // "<call> <observation type>"
	commands map[string]int
}

func (r *spanRecorder) tracer(ctx context.Context, call, key string) (context.Context, func(Observation)) {
	name := call + " " + key
	return context.WithValue(ctx, spanKey{}, name), func(o Observation) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ended = append(r.ended, name+" "+string(o.Type))
	}
}

func (r *spanRecorder) ran(ctx context.Context) {
	if name, ok := ctx.Value(spanKey{}).(string); ok {
		r.mu.Lock()
		r.commands[name]++
		r.mu.Unlock()
	}
}

// TestTracerWrapsCalls checks that WithTracer's hook sees every Obtain, TryObtain and
// Release that reaches Redis once, that the Redis requests run under the context it
// returned, and that it ends each with the Observation that concludes the call.
func TestTracerWrapsCalls(t *testing.T) {
	srv := redistest.Start(t)
	rec := &spanRecorder{commands: map[string]int{}}
	// ContextTimeoutEnabled: Release then sends on rdb itself. Without it, it sends on a
	// WithTimeout clone, which go-redis (v9.23) makes without the hooks added to rdb.
	rdb := srv.Client(func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	rdb.AddHook(redistest.RequestHook(rec.ran))
	c := New(rdb, WithTracer(rec.tracer))
	defer c.Close()
	ctx := testCtx(t, 10*time.Second)

	l := mustObtain(t, c, ctx, "traced", time.Minute)
	if _, err := c.TryObtain(ctx, "traced", time.Minute); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock = %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Obtain(short, "traced", time.Minute); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Obtain of a held lock = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)                            // refused before Redis: no span
	_, _ = c.Obtain(ctx, "", time.Minute)         // invalid: no span
	_, _ = c.TryObtain(ctx, "x", time.Nanosecond) // invalid: no span

	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"Obtain traced acquired", "TryObtain traced not_obtained", "Obtain traced not_obtained",
		"Release traced released"}
	if !slices.Equal(rec.ended, want) {
		t.Errorf("ended calls:\n got %q\nwant %q", rec.ended, want)
	}
	for _, call := range []string{"Obtain traced", "TryObtain traced", "Release traced"} {
		if rec.commands[call] == 0 {
			t.Errorf("no Redis command ran under %s's context (%v)", call, rec.commands)
		}
	}
}

// TestReleasedAfterLost checks WasLost: set on the released Observation of a lock that
// was lost first, and only then.
func TestReleasedAfterLost(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var released []Observation
	c, _ := newTestClient(t, srv, WithObserver(func(o Observation) {
		if o.Type == EventReleased {
			mu.Lock()
			released = append(released, o)
			mu.Unlock()
		}
	}))
	ctx := testCtx(t, 10*time.Second)
	held := mustObtain(t, c, ctx, "kept", time.Minute)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expiring := mustObtain(t, c, ctx, "expiring", 30*time.Millisecond)
	waitLost(t, expiring, 5*time.Second, "after the ttl", ErrValidityPassed)
	_ = expiring.Release(ctx)

	mu.Lock()
	defer mu.Unlock()
	if len(released) != 2 || released[0].WasLost || !released[1].WasLost {
		t.Fatalf("released observations %+v: want WasLost false, then true", released)
	}
}
