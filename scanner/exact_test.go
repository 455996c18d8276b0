package scanner

import (
	"errors"
	"sync"
	"testing"

	"github.com/lockscope/lockscope/connect"
)

// TestCensusExactWhileKeysChange: 10,000 locks, 1,000 of them deleted and 1,000 new ones
// created while the scan runs (after its first batch): every surviving key is in the census
// exactly once, nothing is reported as an error.
func TestCensusExactWhileKeysChange(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	keys := loadLocks(t, c, "exact", 10_000)
	deleted := map[string]bool{}
	for i := 0; i < len(keys); i += 10 {
		deleted[keys[i]] = true
	}

	s := New(target, Options{Count: 200}) // many SCAN calls, so the changes land mid-scan
	var mu sync.Mutex
	var got []Lock
	var once sync.Once
	var changeErr error
	p := s.newPass(sink{batch: func(_ int, locks []Lock) error {
		locks = compact(locks)
		once.Do(func() {
			pipe := c.Pipeline()
			for k := range deleted {
				pipe.Del(ctx, k)
			}
			if _, changeErr = pipe.Exec(ctx); changeErr == nil {
				_, changeErr = writeLocks(c, "new", 1000) // grows the table: SCAN may now repeat keys
			}
		})
		mu.Lock()
		got = append(got, locks...)
		mu.Unlock()
		return nil
	}})
	census, err := p.run(ctx)
	must(t, err)
	must(t, changeErr)
	if len(census.Warnings) > 0 || len(census.Missing) > 0 {
		t.Errorf("warnings %v missing %v", census.Warnings, census.Missing)
	}
	m := byKey(t, got) // fails on any duplicate
	for _, k := range keys {
		if _, ok := m[k]; !ok && !deleted[k] {
			t.Errorf("surviving key %s missing from the census", k)
		}
	}
	n, _ := c.DBSize(ctx).Result()
	if len(m) > 11_000 || int64(len(m)) < n-1000 {
		t.Errorf("census has %d keys; server has %d now", len(m), n)
	}
}

func TestClaimDropsRepeats(t *testing.T) {
	p := New(connect.Target{}, Options{}).newPass(sink{})
	if got := p.claim([]string{"a", "b", "a"}); len(got.keys) != 2 || got.start != 0 {
		t.Fatalf("claim = %+v", got)
	}
	if got := p.claim([]string{"b", "c"}); len(got.keys) != 1 || got.keys[0] != "c" || got.start != 2 {
		t.Fatalf("claim = %+v", got)
	}
}

// TestVanishedKeysAreDropped: keys that SCAN returned but that are gone when read do not
// appear, and are not an error.
func TestVanishedKeysAreDropped(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	loadLocks(t, c, "v", 3)
	s := New(target, Options{})
	p := s.newPass(sink{})
	locks := make([]Lock, 4)
	must(t, s.readLocks(ctx, []string{"lock:v:0000000", "lock:gone:1", "lock:v:0000002", "lock:gone:2"}, s.servers(), newReaders(s.servers()), p, locks))
	locks = compact(locks)
	if len(locks) != 2 || locks[0].Key != "lock:v:0000000" || locks[1].Key != "lock:v:0000002" {
		t.Fatalf("got %d locks: %+v", len(locks), locks)
	}

	l, err := s.Get(ctx, "lock:gone:1")
	if !errors.Is(err, ErrGone) || !l.Gone || l.Addr != target.Addrs[0] || len(l.PerInstance()) != 1 || l.PerInstance()[0].Present {
		t.Fatalf("Get(gone) = %+v, %v", l, err)
	}
	l, err = s.Get(ctx, "lock:v:0000001")
	if err != nil || l.Gone || l.Node != "node-1" || l.Format != FormatLockscope {
		t.Fatalf("Get = %+v, %v", l, err)
	}
}

// TestCensusExactWhileTableResizes: Census (which finds SCAN's repeats after the pass, see
// dropRepeats) while another client deletes 1,000 keys and writes 5,000 new ones, resizing
// the server's table mid-scan: no key twice, every untouched key present.
func TestCensusExactWhileTableResizes(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	keys := loadLocks(t, c, "resize", 10_000)
	deleted := map[string]bool{}
	for i := 0; i < len(keys); i += 10 {
		deleted[keys[i]] = true
	}
	changed := make(chan error, 1)
	go func() {
		pipe := c.Pipeline()
		for k := range deleted {
			pipe.Del(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		if err == nil {
			_, err = writeLocks(c, "grow", 5000)
		}
		changed <- err
	}()
	census, err := New(target, Options{Count: 100}).Census(ctx)
	must(t, err)
	must(t, <-changed)
	m := byKey(t, census.Locks) // fails on any duplicate
	for _, k := range keys {
		if _, ok := m[k]; !ok && !deleted[k] {
			t.Errorf("untouched key %s missing from the census", k)
		}
	}
}
