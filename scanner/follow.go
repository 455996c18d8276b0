package scanner

import (
	"context"
	"sync"
	"time"

	"github.com/lockscope/lockscope/connect"
)

// dirtyKeys is the set of keys to re-read: a key named many times before it is read is
// read once.
type dirtyKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
	wake chan struct{} // signalled when keys were added
}

func newDirtyKeys() *dirtyKeys {
	return &dirtyKeys{keys: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

func (d *dirtyKeys) add(keys ...string) {
	if len(keys) == 0 {
		return
	}
	d.mu.Lock()
	for _, k := range keys {
		d.keys[k] = struct{}{}
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// take removes and returns at most n keys.
func (d *dirtyKeys) take(n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, min(n, len(d.keys)))
	for k := range d.keys {
		if len(out) == n {
			break
		}
		out = append(out, k)
		delete(d.keys, k)
	}
	return out
}

// expiries remembers when keys' TTLs run out, for a target with a server followed by
// locklib's events only: nothing tells when Redis expires a key there, so each key is
// re-read once its TTL has passed. A nil *expiries does nothing.
type expiries struct {
	mu sync.Mutex
	at map[int64]map[string]struct{} // keys by the Unix second after their TTL ends
}

func (e *expiries) note(locks []Lock) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range locks {
		l := &locks[i]
		if l.Gone || l.NoExpiry || l.TTL <= 0 {
			continue
		}
		sec := l.FetchedAt.Add(l.TTL).Unix() + 1
		if e.at[sec] == nil {
			e.at[sec] = map[string]struct{}{}
		}
		e.at[sec][l.Key] = struct{}{}
	}
}

// due removes and returns the keys whose TTL ran out by now.
func (e *expiries) due(now time.Time) []string {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for sec, keys := range e.at {
		if sec > now.Unix() {
			continue
		}
		for k := range keys {
			out = append(out, k)
		}
		delete(e.at, sec)
	}
	return out
}

// reread reads keys now and returns a record for each (on independent servers, one for each
// server), Gone for a key that exists on no server (on independent servers: not on that one). Keys on a server that cannot be read now are left out: the next pass tells.
// quiet holds the warnings already given (the caller's, one goroutine's).
func (s *Scanner) reread(ctx context.Context, keys []string, quiet map[string]bool, warn func(string)) []Lock {
	p := s.newPass(sink{warn: warn})
	p.suppress(quiet)
	defer func() {
		for _, msg := range p.summaryWarnings() {
			quiet[msg] = true
		}
	}()
	groups, readers := s.byServer(ctx, keys)
	out := make([]Lock, 0, len(keys))
	for id, group := range groups {
		rs := readers[id]
		dst := make([]Lock, len(group))
		if err := s.readLocks(ctx, group, rs, newReaders(rs), p, dst); err != nil {
			continue
		}
		if p.allMissing(rs) {
			continue // no instance answered: gone or not, nobody can say
		}
		for i := range dst {
			if dst[i].Key == "" {
				dst[i] = Lock{Key: group[i], Gone: true, FetchedAt: p.fetched}
				if s.target.Mode != connect.Redlock {
					dst[i].Addr = rs[0].addr
				}
			}
		}
		dropPermits(s.opts.Pattern, dst)
		out = append(out, compact(dst)...)
	}
	return out
}

// byServer groups keys by where they are read: one group for a standalone server or
// Redlock, one per master for a cluster (keys whose master is unknown now are left out), and
// every key on each independent server (the key is a lock of its own on each).
func (s *Scanner) byServer(ctx context.Context, keys []string) (map[string][]string, map[string][]server) {
	if s.target.Mode == connect.Independent {
		groups, readers := map[string][]string{}, map[string][]server{}
		for _, srv := range s.servers() {
			groups[srv.addr], readers[srv.addr] = keys, []server{srv}
		}
		return groups, readers
	}
	if s.target.Mode != connect.Cluster {
		return map[string][]string{"": keys}, map[string][]server{"": s.servers()}
	}
	groups, readers := map[string][]string{}, map[string][]server{}
	for _, k := range keys {
		rs, err := s.readersFor(ctx, k)
		if err != nil {
			continue
		}
		id := rs[0].addr
		groups[id] = append(groups[id], k)
		readers[id] = rs
	}
	return groups, readers
}

// allMissing reports whether every one of servers failed in this pass.
func (p *pass) allMissing(servers []server) bool {
	for _, srv := range servers {
		if !p.isMissing(srv.addr) {
			return false
		}
	}
	return true
}
