package locklib

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// Every error a user gets is one line that names its key, and errors.Is still finds each
// error it wraps: the sentinel, the context's error, a Redis error.
func TestErrorsAreOneLineAndNameTheKey(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	c, rdb := newTestClient(t, srv)
	other, _ := newTestClient(t, srv)
	ctx := testCtx(t, 30*time.Second)

	check := func(t *testing.T, path, key string, err error, wraps ...error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error", path)
			return
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: a message of several lines: %q", path, err)
		case !strings.Contains(err.Error(), `"`+key+`"`):
			t.Errorf("%s: %q does not name the key %q", path, err, key)
		}
		for _, w := range wraps {
			if !errors.Is(err, w) {
				t.Errorf("%s: %q does not wrap %v", path, err, w)
			}
		}
	}

	held := mustObtain(t, other, ctx, "lock:held", 10*time.Second)
	defer held.Release(ctx)
	_, err := c.TryObtain(ctx, "lock:held", time.Second)
	check(t, "TryObtain of a held key", "lock:held", err, ErrNotObtained)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Obtain(short, "lock:held", time.Second)
	check(t, "Obtain whose context ended", "lock:held", err, ErrNotObtained, context.DeadlineExceeded)
	_, err = c.Obtain(ctx, "lock:tiny", time.Microsecond)
	check(t, "Obtain with a ttl below 1ms", "lock:tiny", err, ErrInvalid)
	_, err = c.TryObtain(ctx, "lock:nobody", time.Second, Reentrant(""))
	check(t, "re-entrant TryObtain without owner", "lock:nobody", err, ErrInvalid)

	l := mustObtain(t, c, ctx, "lock:gone", 10*time.Second)
	rdb.Del(ctx, "lock:gone")
	check(t, "Refresh of a deleted lock", "lock:gone", l.Refresh(ctx, time.Second), ErrNotHeld)
	check(t, "Err after a refused Refresh", "lock:gone", l.Err(), ErrLost, ErrNotHeld)
	check(t, "Release of a deleted lock", "lock:gone", l.Release(ctx), ErrNotHeld)
	check(t, "second Release", "lock:gone", l.Release(ctx), ErrNotHeld)
	check(t, "Refresh after Release", "lock:gone", l.Refresh(ctx, time.Second), ErrNotHeld)

	brief := mustObtain(t, c, ctx, "lock:brief", 50*time.Millisecond)
	waitLost(t, brief, 5*time.Second, "at the end of its validity")
	check(t, "Err after the validity passed", "lock:brief", brief.Err(), ErrLost, ErrValidityPassed)
	check(t, "Refresh after the validity passed", "lock:brief", brief.Refresh(ctx, time.Second), ErrLost, ErrValidityPassed)

	stays := mustObtain(t, c, ctx, "lock:down", 10*time.Second)
	srv.Kill()
	_, err = stays.TTL(ctx)
	check(t, "TTL with the server down", "lock:down", err, ErrBackend)
	check(t, "Refresh with the server down", "lock:down", stays.Refresh(ctx, time.Second), ErrBackend)
	check(t, "Release with the server down", "lock:down", stays.Release(ctx), ErrBackend)
	_, err = c.Obtain(ctx, "lock:down", time.Second)
	check(t, "Obtain with the server down", "lock:down", err, ErrBackend)
}

// Redlock's errors gather every instance's error, on one line.
func TestRedlockErrorsAreOneLineAndNameTheKey(t *testing.T) {
	redistest.Slow(t)
	f := newRedlockFixture(t, 3)
	c := f.client(t)
	ctx := testCtx(t, 30*time.Second)
	l := mustObtain(t, c, ctx, "lock:rl:down", 10*time.Second)
	// Frozen rather than killed: a killed server leaves go-redis dialing it in the background.
	f.servers[0].Pause()
	f.servers[1].Pause()
	defer f.servers[1].Resume()
	defer f.servers[0].Resume()
	defer l.Release(ctx)
	for path, err := range map[string]error{
		"TryObtain": func() error { _, err := c.TryObtain(ctx, "lock:rl:down", time.Second); return err }(),
		"Obtain": func() error {
			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := c.Obtain(short, "lock:rl:down", time.Second)
			return err
		}(),
		"Refresh":     l.Refresh(ctx, time.Second),
		"TTL":         func() error { _, err := l.TTL(ctx); return err }(),
		"ttl < drift": func() error { _, err := c.TryObtain(ctx, "lock:rl:down", time.Millisecond); return err }(),
	} {
		switch {
		case err == nil:
			t.Errorf("%s: no error", path)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: a message of several lines: %q", path, err)
		case !strings.Contains(err.Error(), `"lock:rl:down"`):
			t.Errorf("%s: %q does not name the key", path, err)
		case path != "ttl < drift" && !errors.Is(err, ErrBackend) && !errors.Is(err, ErrNotObtained):
			// The first TryObtain may find the instances merely slow: not obtained.
			t.Errorf("%s: %q wraps neither ErrBackend nor ErrNotObtained", path, err)
		}
		t.Logf("%s: %v", path, err)
	}
}
