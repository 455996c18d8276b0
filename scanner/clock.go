package scanner

import (
	"context"
	"slices"
	"sync"
	"time"
)

// ServerClock is one server's clock as read with TIME.
//
// A lock's age is measured on its server's clock, not the local one: locklib stamps a value
// with its server's TIME, and a console on a laptop whose clock is off, or a server whose
// clock is, must still show how long the lock has been held. TTLs need no clock (PTTL is
// relative).
type ServerClock struct {
	Addr string
	// Ahead is the server's clock minus the local clock at the middle of the round trip
	// (negative: the server's clock is behind).
	Ahead time.Duration
	// Answered is the local time the server answered.
	Answered time.Time
}

// HeartbeatEvery is how often Watch reads every server's clock (UpdateClock): a server whose
// last answer is a few of these old has stopped answering, and what was read from it is old.
const HeartbeatEvery = time.Second

// Clocks are the servers' clocks by address: the owner of "now on the server". A server not
// in it counts as agreeing with the local clock.
type Clocks map[string]ServerClock

// Now is the time on l's server's clock at local time local: its Addr's clock, for a Redlock
// record the median of its instances' (one instance's stamp is in the value, any of them).
func (c Clocks) Now(l *Lock, local time.Time) time.Time {
	if clock, ok := c[l.Addr]; ok && l.Addr != "" {
		return local.Add(clock.Ahead)
	}
	if l.Quorum == nil {
		return local
	}
	var ahead []time.Duration
	for _, in := range l.Quorum.Instances {
		if clock, ok := c[in.Addr]; ok {
			ahead = append(ahead, clock.Ahead)
		}
	}
	if len(ahead) == 0 {
		return local
	}
	slices.Sort(ahead)
	return local.Add(ahead[len(ahead)/2])
}

// readClock reads srv's clock.
func readClock(ctx context.Context, srv followed) (ServerClock, error) {
	before := time.Now()
	at, err := srv.rdb.Time(ctx).Result()
	if err != nil {
		return ServerClock{}, err
	}
	after := time.Now()
	return ServerClock{Addr: srv.addr, Ahead: at.Sub(before.Add(after.Sub(before) / 2)), Answered: after}, nil
}

// Clocks reads the clock of every server of the target once (for `ls` and `show`, which
// measure ages on them). A server that cannot be read is left out: its records are aged on
// the local clock.
func (s *Scanner) Clocks(ctx context.Context) Clocks {
	targets, _ := s.followTargets(ctx)
	out := Clocks{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			if clock, err := readClock(ctx, t); err == nil {
				mu.Lock()
				out[t.addr] = clock
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
