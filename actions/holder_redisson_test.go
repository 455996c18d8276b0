package actions

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Against a real Redisson 3.52.0 client: releasing one reader of an RReadWriteLock leaves the
// other holding (Redisson's own view: held=true) and the released one sees its lock gone;
// releasing the other lets Redisson's blocked writer in at once (told on the lock's channel,
// not at its next retry, up to 30 s later). A permit of an RPermitExpirableSemaphore goes back
// to the permits available; an RSemaphore names no holder.
func TestReleaseHolderRedissonPeer(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	peer := redistest.StartRedissonPeer(t, srv, redistest.RedissonWriterWaits)
	c := srv.Client()
	ctx := testCtx(t)
	a := New(connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{c}, Addrs: []string{srv.Addr}}, Options{})
	event := func(prefix string) string {
		t.Helper()
		line, ok := peer.Event(prefix, 5*time.Second)
		if !ok {
			t.Fatalf("the peer never said %q", prefix)
		}
		return line
	}
	client := strings.TrimPrefix(event("CLIENT-ID "), "CLIENT-ID ")
	reader := func(n string) string { return client + ":" + strings.Fields(event("HOLDER rw-read-" + n + " "))[2] }
	const rw = "lock:redisson:rw-read"

	first := holderOf(t, a, rw, reader("1"))
	if res, err := a.ReleaseHolder(ctx, rw, first.ID, first.Seen, "test"); err != nil || res.Outcome != Released {
		t.Fatalf("release reader 1: %q %v", res.Outcome, err)
	}
	event("STATE rw-read-1 held=false")
	event("UNLOCK-AFTER-LOSS rw-read-1") // its unlock() after the loss changes nothing
	second := holderOf(t, a, rw, reader("2"))
	if mode := c.HGet(ctx, rw, "mode").Val(); mode != "read" {
		t.Fatalf("mode %q with reader 2 holding: the writer got in", mode)
	}
	if line, ok := peer.Event("STATE rw-read-2 held=false", 0); ok {
		t.Fatalf("reader 2 lost its lock: %s", line)
	}

	released := time.Now()
	if res, err := a.ReleaseHolder(ctx, rw, second.ID, second.Seen, "test"); err != nil || res.Outcome != Released {
		t.Fatalf("release reader 2: %q %v", res.Outcome, err)
	}
	at, _ := strconv.ParseInt(strings.Fields(event("RW-WRITER-ACQUIRED "))[1], 10, 64)
	t.Logf("Redisson's blocked writer got the lock %v after the last reader's release", time.UnixMilli(at).Sub(released).Round(time.Millisecond))
	if w := holderOf(t, a, rw, client+":"+strings.Fields(event("HOLDER rw-writer "))[2]); w.Count != 1 {
		t.Fatalf("the writer holds %+v", w)
	}

	const psem = "lock:redisson:psem"
	permit := strings.TrimPrefix(event("PSEM-PERMIT "), "PSEM-PERMIT ")
	p := holderOf(t, a, psem, permit)
	if res, err := a.ReleaseHolder(ctx, psem, p.ID, p.Seen, "test"); err != nil || res.Outcome != Released {
		t.Fatalf("release the permit: %q %v", res.Outcome, err)
	}
	// With no permit out, its permits' set is gone: it reads as a semaphore without holders.
	if l, err := a.PeekHolders(ctx, psem); !errors.Is(err, ErrNoHolders) || l.Shared.Available != 3 || len(l.Shared.Holders) != 0 {
		t.Fatalf("after the release: %+v %v, want 3 available and no permit out", l.Shared, err)
	}

	if _, err := a.PeekHolders(ctx, "lock:redisson:sem"); !errors.Is(err, ErrNoHolders) {
		t.Fatalf("RSemaphore: %v, want ErrNoHolders", err)
	}
}
