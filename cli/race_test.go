package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestCLIReleaseNeverDeletesTheNextOwner runs `lockscope release KEY --yes` hundreds of times
// while the owner keeps releasing the key and re-acquiring it with a new value, so the owner
// often re-acquires between the command's read and its delete. Every value that vanished under
// the owner must be one the command reported as released; a delete of the new owner's value
// would show up as a vanished value nobody released.
func TestCLIReleaseNeverDeletesTheNextOwner(t *testing.T) {
	s := redistest.Start(t)
	owner := s.Client()
	ctx, cancel := context.WithCancel(t.Context())
	const key, iterations = "lock:race", 200

	var (
		mu       sync.Mutex
		vanished []string
		ownerErr error
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			value := fmt.Sprintf("owner:-:%d:%016x", time.Now().UnixMilli(), i)
			if err := owner.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", TTL: time.Minute}).Err(); err != nil {
				if ctx.Err() == nil {
					ownerErr = fmt.Errorf("re-acquire: %w", err)
				}
				return
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			held, err := redistest.OwnerRelease(ctx, owner, key, value)
			if err != nil {
				if ctx.Err() == nil {
					ownerErr = err
				}
				return
			}
			if !held {
				mu.Lock()
				vanished = append(vanished, value)
				mu.Unlock()
			}
		}
	})

	released := map[string]bool{}
	codes := map[int]int{}
	for range iterations {
		r := runCLI(t, cliOpts{}, "release", key, "--yes", "--json", "--redis", redisURL(s.Addr))
		codes[r.code]++
		switch r.code {
		case exitOK:
			released[jsonLines(t, r.stdout)[0]["seen"].(string)] = true
		case exitChanged, exitGone:
		default:
			t.Fatalf("unexpected result:\n%s", r)
		}
	}
	cancel()
	wg.Wait()
	if ownerErr != nil {
		t.Fatal(ownerErr)
	}
	for _, v := range vanished {
		if !released[v] {
			t.Errorf("the owner's value %q was deleted but no release reported it", v)
		}
	}
	t.Logf("exit codes %v; owner values released by the operator: %d", codes, len(vanished))
	if codes[exitChanged] == 0 || codes[exitOK] == 0 {
		t.Fatalf("the race was not exercised: exit codes %v", codes)
	}
}
