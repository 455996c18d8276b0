package cli

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// `release KEY --holder ID` removes that holder of a read-write lock alone, after showing it
// beside the others; refusals name why, with their exit codes; the audit trail has the holder.
func TestCLIReleaseHolder(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	ctx := context.Background()
	url := redisURL(s.Addr)
	member := func(op, owner string) string {
		return protocol.LeaseMember{Mode: protocol.ModeRead, Op: "6f1c0a9e3b2d4c51:" + op,
			Value: protocol.Value{Node: "api-" + op, AcquiredAt: time.UnixMilli(1764489600123), Rand: owner}}.String()
	}
	const ownerA, ownerB = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
	deadline := float64(time.Now().Add(time.Minute).UnixMilli())
	c.ZAdd(ctx, "lock:doc", redis.Z{Score: deadline, Member: member("1", ownerA)}, redis.Z{Score: deadline, Member: member("2", ownerB)})
	c.Set(ctx, "lock:plain", "api-7:-:1764489600123:0123456789abcdef", time.Minute)
	c.Set(ctx, "lock:sem", "3", 0)

	// Without --holder: which holder is not said, so nothing is touched (exit 2, naming --holder).
	r := runCLI(t, cliOpts{}, "release", "lock:doc", "--yes", "--redis", url)
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "lock:doc is a rwlock with 2 holders: release one of them with --holder ID") {
		t.Errorf("no hint at --holder:\n%s", r)
	}

	r = runCLI(t, cliOpts{}, "release", "lock:doc", "--holder", ownerA, "--yes", "--reason", "stuck reader", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stderr, "> read "+ownerA+" ×1") || !strings.Contains(r.stderr, "  read "+ownerB) ||
		!strings.Contains(r.stdout, "released holder "+ownerA+" of lock:doc") {
		t.Errorf("the holder was not shown or not reported:\n%s", r)
	}
	if got := c.ZRange(ctx, "lock:doc", 0, -1).Val(); !slices.Equal(got, []string{member("2", ownerB)}) {
		t.Fatalf("left %q, want B's member", got)
	}

	// The same holder again: gone (exit 5), naming who holds now. A wrong --expect: 4.
	r = runCLI(t, cliOpts{}, "release", "lock:doc", "--holder", ownerA, "--yes", "--redis", url)
	expectExit(t, r, exitGone)
	if !strings.Contains(r.stderr, "holders now: "+ownerB) {
		t.Errorf("no list of the holders:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, "release", "lock:doc", "--holder", ownerB, "--expect", member("3", ownerB), "--json", "--redis", url)
	expectExit(t, r, exitChanged)
	if obj := jsonLines(t, r.stdout)[0]; obj["holder"] != ownerB || obj["outcome"] != "value_differs" || obj["action"] != "release-holder" {
		t.Errorf("release --holder --json = %v", obj)
	}
	r = runCLI(t, cliOpts{}, "release", "lock:doc", "--holder", ownerB, "--expect", member("2", ownerB), "--redis", url)
	expectExit(t, r, exitOK)
	if c.Exists(ctx, "lock:doc").Val() != 0 {
		t.Fatal("the lease set outlived its last holder")
	}

	// A plain lock and a Redisson RSemaphore have no holder to name: exit 2, one line.
	for key, says := range map[string]string{"lock:plain": "release it without naming a holder", "lock:sem": "release it without --holder"} {
		r = runCLI(t, cliOpts{}, "release", key, "--holder", ownerA, "--yes", "--redis", url)
		expectExit(t, r, exitUsage)
		if !strings.Contains(r.stderr, says) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: want one line saying %q:\n%s", key, says, r)
		}
	}
	if c.Exists(ctx, "lock:plain", "lock:sem").Val() != 2 {
		t.Fatal("a refused release touched a key")
	}
	// The RSemaphore's count may be a naive lock whose EXPIRE never came: it goes as a lock.
	r = runCLI(t, cliOpts{}, "release", "lock:sem", "--yes", "--redis", url)
	expectExit(t, r, exitOK)
	if c.Exists(ctx, "lock:sem").Val() != 0 {
		t.Fatalf("lock:sem not released as a lock:\n%s", r)
	}

	r = runCLI(t, cliOpts{}, "audit", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	recs := jsonLines(t, r.stdout)
	last := recs[len(recs)-2] // the first release (the oldest is the refusal without --holder)
	if last["holder"] != ownerA || last["action"] != "release-holder" || last["result"] != "released" || last["reason"] != "stuck reader" {
		t.Errorf("audit record %v", last)
	}
}

// `release KEY --together K2` deletes a multi-key lock's keys all or nothing, after showing each
// key's value; a key holding another value refuses them all (exit 4, naming it).
func TestCLIReleaseTogether(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	ctx := context.Background()
	url := redisURL(s.Addr)
	const value, other = "api-7:req-9:1764489600123:00112233445566ff", "w-2:-:1764489600123:fedcba9876543210"
	c.Set(ctx, "lock:{o}:a", value, time.Minute)
	c.Set(ctx, "lock:{o}:b", other, time.Minute)

	r := runCLI(t, cliOpts{}, "release", "lock:{o}:a", "--together", "lock:{o}:b", "--yes", "--redis", url)
	expectExit(t, r, exitChanged)
	if !strings.Contains(r.stderr, "another value, so none would be released") || !strings.Contains(r.stdout, "not done: lock:{o}:b holds w-2") {
		t.Errorf("the differing key is not named:\n%s", r)
	}
	if c.Exists(ctx, "lock:{o}:a", "lock:{o}:b").Val() != 2 {
		t.Fatal("a refused release together deleted a key")
	}

	c.Set(ctx, "lock:{o}:b", value, time.Minute)
	r = runCLI(t, cliOpts{}, "release", "lock:{o}:a", "--together", "lock:{o}:b", "--yes", "--reason", "stuck order", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	obj := jsonLines(t, r.stdout)[0]
	checkFields(t, "release --together --json", obj, resultFields)
	if keys, _ := obj["keys"].([]any); obj["action"] != "release-together" || obj["outcome"] != "released" || len(keys) != 2 {
		t.Errorf("release --together --json = %v", obj)
	}
	if c.Exists(ctx, "lock:{o}:a", "lock:{o}:b").Val() != 0 {
		t.Fatal("keys left after a release together")
	}

	r = runCLI(t, cliOpts{}, "release", "lock:{o}:a", "--together", "lock:{o}:b", "--holder", "x", "--redis", url)
	expectExit(t, r, exitUsage)

	r = runCLI(t, cliOpts{}, "audit", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	if rec := jsonLines(t, r.stdout)[0]; rec["action"] != "release-together" || rec["reason"] != "stuck order" || len(rec["keys"].([]any)) != 2 {
		t.Errorf("audit record %v", rec)
	}
}

// `extend KEY --holder ID --ttl` re-times that holder alone, never shortening it.
func TestCLIExtendHolder(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	ctx := context.Background()
	url := redisURL(s.Addr)
	const owner = "aaaaaaaaaaaaaaaa"
	m := protocol.LeaseMember{Mode: protocol.ModePermit, Op: "6f1c0a9e3b2d4c51:1",
		Value: protocol.Value{Node: "api-1", AcquiredAt: time.UnixMilli(1764489600123), Rand: owner}}.String()
	c.ZAdd(ctx, "lock:pool", redis.Z{Score: float64(time.Now().Add(10 * time.Second).UnixMilli()), Member: m})

	r := runCLI(t, cliOpts{}, "extend", "lock:pool", "--holder", owner, "--ttl", "1m", "--yes", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	if obj := jsonLines(t, r.stdout)[0]; obj["action"] != "extend-holder" || obj["outcome"] != "extended" || obj["ttl_ms"] != 60000.0 || obj["holder"] != owner {
		t.Errorf("extend --holder --json = %v", obj)
	}
	if left := time.Until(time.UnixMilli(int64(c.ZScore(ctx, "lock:pool", m).Val()))); left < 55*time.Second {
		t.Fatalf("the permit has %v left", left)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:pool", "--holder", owner, "--ttl", "5s", "--yes", "--redis", url)
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stdout, "a holder's lease is never shortened") {
		t.Errorf("no reason given:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:pool", "--holder", owner, "--ttl", "5s", "--allow-shorten", "--yes", "--redis", url)
	expectExit(t, r, exitUsage)
}
