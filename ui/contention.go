package ui

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// The contention overview's window: contentionBuckets buckets of contentionBucket each (the
// last 5 minutes); hand-offs/s is the rate over the last rateSpan of them.
const (
	contentionBucket  = 5 * time.Second
	contentionBuckets = 60
	contentionWindow  = contentionBuckets * contentionBucket
	rateSpan          = time.Minute
)

// maxGroups is how many distinct key groups the overview keeps; later ones fold into
// keygroup.Other.
const maxGroups = 100

// maxRememberedKeys bounds the keys whose last holder the aggregator remembers itself: those
// locklib's events speak of, and those that left the census (to tell a key that returns with
// another holder from one that returns with the same). The census's own keys are remembered
// by the lock set.
const maxRememberedKeys = 1 << 15

// contention aggregates, per key group (keygroup), how many locks and waiters the group has
// now and how often its locks change hands, in a fixed window of time buckets. It is fed what
// the root model receives anyway: every change of the census, as the lock set makes it
// (observeRow, the set's watch hook: a new row, a replaced row, a removed row), locklib's
// events (observeEvent) and the event waiter counts on each tick (sample). Its memory is
// bounded: at most maxGroups groups plus keygroup.Other, contentionBuckets buckets each, and
// at most maxRememberedKeys remembered holders.
//
// A hand-off is the holder of a key changing to another holder: a new acquisition, not a
// renewal (same value) nor a re-entry (same value but for locklib's count; a Redisson owner's
// id does not change with its count). The first sighting of a key is none. For the keys
// locklib's events speak of (acquired, renewed, released, which carry the holder's value)
// the events count them, as they see every holder; for the others successive census
// records of the key do, a key that left the census and came back with another holder
// included.
type contention struct {
	rule     keygroup.Rule
	folder   *keygroup.Folder
	clock    func() time.Time
	byServer bool // independent servers: lock ids are server and key, and events are not used
	seed     maphash.Seed

	groups map[string]*groupStats
	// remembered is the last holder (its hash) of keys events speak of or that left the
	// census, by lock id.
	remembered map[string]keyMark
	sweptAt    int64 // the bucket of the last sweep of remembered

	head  int64     // the newest bucket's number (unix ns / contentionBucket); buckets are a ring
	since time.Time // the first observation: rates before a rateSpan passed are over the time since
}

// keyMark is the last holder of a key the aggregator remembers.
type keyMark struct {
	holder   uint64 // the hash of holderOf's answer
	byEvents bool   // learnt from locklib's events: they count this key's hand-offs
	at       time.Time
}

// groupStats is one group's figures: what it has now, and per bucket.
type groupStats struct {
	name          string
	locks         int
	censusWaiters int // the waiters of its locks as the scanner read them
	eventWaiters  int // the waiters events reported for its other locks, at the last sample
	handoffs      [contentionBuckets]uint32
	waiters       [contentionBuckets]uint32 // the most waiters sampled in the bucket
}

func newContention(rule keygroup.Rule, byServer bool, clock func() time.Time) *contention {
	return &contention{rule: rule, folder: keygroup.NewFolder(maxGroups), clock: clock, byServer: byServer,
		seed: maphash.MakeSeed(), groups: map[string]*groupStats{}, remembered: map[string]keyMark{}}
}

// groupOf is the group of key as the overview shows it: the rule's, folded at the cap.
func (c *contention) groupOf(key string) string { return c.folder.Fold(c.rule.Group(key)) }

// stats is the figures of key's group, created on first use.
func (c *contention) stats(key string) *groupStats {
	name := c.groupOf(key)
	g := c.groups[name]
	if g == nil {
		g = &groupStats{name: strings.Clone(name)}
		// A new group's past buckets are empty; from now on it is advanced with the others.
		c.groups[g.name] = g
	}
	return g
}

// bucketOf is the number of the bucket t falls in.
func bucketOf(t time.Time) int64 { return t.UnixNano() / int64(contentionBucket) }

// slot is where bucket b lives in a group's ring.
func slot(b int64) int { return int(b % contentionBuckets) }

// advance moves the window to now: the buckets passed since the newest are cleared of
// hand-offs and start with the waiters of the group then. A clock that went back is ignored.
func (c *contention) advance(now time.Time) {
	if c.since.IsZero() {
		c.since, c.head = now, bucketOf(now)
		return
	}
	b := bucketOf(now)
	if b <= c.head {
		return
	}
	for _, g := range c.groups {
		w := uint32(max(g.waitersNow(), 0))
		for n := c.head + 1; n <= b && n <= c.head+contentionBuckets; n++ {
			g.handoffs[slot(n)], g.waiters[slot(n)] = 0, w
		}
	}
	c.head = b
}

func (g *groupStats) waitersNow() int { return g.censusWaiters + g.eventWaiters }

// noteWaiters records g's waiters now in the newest bucket.
func (c *contention) noteWaiters(g *groupStats) {
	s := slot(c.head)
	g.waiters[s] = max(g.waiters[s], uint32(max(g.waitersNow(), 0)))
}

// handoff counts one hand-off of g in the newest bucket.
func (c *contention) handoff(g *groupStats) { g.handoffs[slot(c.head)]++ }

// rowWaiters is what a row adds to its group's census waiters.
func rowWaiters(r *lockRow) int {
	if r.flags&rowHasWaiters == 0 {
		return 0
	}
	return r.waiters
}

// isLock says whether a row counts as a lock of its group (a key of another type does not).
func isLock(r *lockRow) bool { return r.kind.format != scanner.FormatNotALock }

// observeRow is the lock set's watch hook: the row of a lock changed from old (nil: the lock
// is new in the census) to new (nil: it left the census).
func (c *contention) observeRow(old, new *lockRow) {
	if old != nil && new != nil && old.value == new.value && rowWaiters(old) == rowWaiters(new) && isLock(old) == isLock(new) {
		return // a re-read, as nearly every record of a pass is: nothing the overview counts changed
	}
	now := c.clock()
	c.advance(now)
	some := cmp.Or(new, old)
	g := c.stats(some.key)
	if old != nil && isLock(old) {
		g.locks--
		g.censusWaiters -= rowWaiters(old)
	}
	if new != nil && isLock(new) {
		g.locks++
		g.censusWaiters += rowWaiters(new)
	}
	c.noteWaiters(g)
	id := rowIDs(c.byServer)(some)
	mark, marked := c.remembered[id]
	if marked && mark.byEvents && now.Sub(mark.at) < contentionWindow {
		return // events count this key's hand-offs
	}
	switch {
	case new == nil: // gone: remember who held it, in case it comes back
		if h := rowHolder(old); h != "" {
			c.remember(id, keyMark{holder: c.hash(h), at: now})
		}
	case old != nil:
		if was, is := rowHolder(old), rowHolder(new); was != "" && is != "" && was != is {
			c.handoff(g)
		}
	case marked: // back in the census
		delete(c.remembered, id)
		if is := rowHolder(new); is != "" && now.Sub(mark.at) < contentionWindow && c.hash(is) != mark.holder {
			c.handoff(g)
		}
	}
}

// observeEvent takes a locklib event: those that name a holder (its value) count a hand-off
// when the holder is another than the key's last, as the events, the key's departure from the
// census or else the census itself (holder: the key's holder there, "" when unknown) knew it.
// A copy of an event changes nothing. A lost event names a holder that no longer has the
// lock, and often comes after the next holder's acquired one (its renewal was refused once the
// other had taken the lock): it counts nothing and is not the key's holder.
func (c *contention) observeEvent(ev protocol.Event, holder func(key string) string) {
	switch locklib.EventType(ev.Type) {
	case locklib.EventAcquired, locklib.EventRenewed, locklib.EventReleased:
	default:
		return
	}
	h := scanner.Holder(scanner.FormatLockscope, ev.Value, nil)
	if c.byServer || h == "" {
		return // an event does not say which server's lock of its key it is about
	}
	now := c.clock()
	c.advance(now)
	is := c.hash(h)
	var was uint64 // the last holder: as events or a departure from the census left it, else the census's
	if mark, ok := c.remembered[ev.Key]; ok && now.Sub(mark.at) < contentionWindow {
		was = mark.holder
	} else if census := holder(ev.Key); census != "" {
		was = c.hash(census)
	}
	if was != 0 && was != is {
		c.handoff(c.stats(ev.Key))
	}
	c.remember(ev.Key, keyMark{holder: is, byEvents: true, at: now})
}

// sample records every group's waiters now: eventWaiters are the waiters events reported for
// locks of the census whose rows do not have the scanner's count, by key.
func (c *contention) sample(eventWaiters map[string]int) {
	c.advance(c.clock())
	for _, g := range c.groups {
		g.eventWaiters = 0
	}
	for key, n := range eventWaiters {
		c.stats(key).eventWaiters += n
	}
	for _, g := range c.groups {
		c.noteWaiters(g)
	}
}

// remember keeps id's last holder, within maxRememberedKeys: when full, the marks older than
// the window go (one sweep a bucket at most); when still full, the key is not remembered (its
// return counts as a first sighting, and the census counts its hand-offs).
func (c *contention) remember(id string, mark keyMark) {
	if _, ok := c.remembered[id]; !ok && len(c.remembered) >= maxRememberedKeys {
		if c.sweptAt == c.head {
			return
		}
		c.sweptAt = c.head
		for k, m := range c.remembered {
			if mark.at.Sub(m.at) >= contentionWindow {
				delete(c.remembered, k)
			}
		}
		if len(c.remembered) >= maxRememberedKeys {
			return
		}
	}
	c.remembered[id] = mark
}

// hash is a holder's hash, never 0 (0: no holder known).
func (c *contention) hash(holder string) uint64 { return max(maphash.String(c.seed, holder), 1) }

// rowHolder is scanner.Holder of a census row.
func rowHolder(r *lockRow) string {
	var owners []scanner.Owner
	if r.rare != nil {
		owners = r.rare.owners
	}
	return scanner.Holder(r.kind.format, r.value, owners)
}

// groupFigures is one group's line of the overview.
type groupFigures struct {
	name     string
	locks    int
	waiters  int
	rate     float64   // hand-offs per second over the last rateSpan
	waitLine []float64 // the most waiters per bucket, oldest first, the newest bucket last; NaN: before the first observation
	handLine []float64 // hand-offs per bucket, likewise
}

// ranked is every group with locks or with something in the window at now, by waiters now,
// then hand-offs per second, then name. It reads the state only: buckets the window has not
// reached yet read as empty of hand-offs and with the group's waiters now.
func (c *contention) ranked(now time.Time) []groupFigures {
	end := bucketOf(now)
	if c.since.IsZero() || end < c.head {
		end = c.head
	}
	first := bucketOf(c.since)
	span := min(max(now.Sub(c.since), time.Second), rateSpan)
	rateFrom := end - int64(rateSpan/contentionBucket) + 1
	out := make([]groupFigures, 0, len(c.groups))
	for _, g := range c.groups {
		f := groupFigures{name: g.name, locks: g.locks, waiters: max(g.waitersNow(), 0),
			waitLine: make([]float64, contentionBuckets), handLine: make([]float64, contentionBuckets)}
		active := f.locks > 0 || f.waiters > 0
		var inRate uint32
		for i := range contentionBuckets {
			b := end - contentionBuckets + 1 + int64(i)
			switch {
			case b < first:
				f.waitLine[i], f.handLine[i] = math.NaN(), math.NaN()
				continue
			case b > c.head:
				f.waitLine[i] = float64(f.waiters)
				continue
			}
			// Within the ring: end-contentionBuckets < b <= c.head <= end.
			w, h := g.waiters[slot(b)], g.handoffs[slot(b)]
			f.waitLine[i], f.handLine[i] = float64(w), float64(h)
			if b >= rateFrom {
				inRate += h
			}
			active = active || w > 0 || h > 0
		}
		if !active {
			continue
		}
		f.rate = float64(inRate) / span.Seconds()
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b groupFigures) int {
		return cmp.Or(cmp.Compare(b.waiters, a.waiters), cmp.Compare(b.rate, a.rate), strings.Compare(a.name, b.name))
	})
	return out
}

// The model's side of the overview's aggregator.

// watchContention starts a new aggregator on the model's census (at start and at each
// session switch), under the model's rule.
func (m *Model) watchContention() {
	m.contention = newContention(m.groups, m.locks.byServer, m.clock)
	m.locks.watch = m.contention.observeRow
}

// censusHolder is key's holder in the census ("" when it is not there).
func (m *Model) censusHolder(key string) string {
	if at, ok := m.locks.find("", key); ok {
		return rowHolder(m.locks.rows[at])
	}
	return ""
}

// sampleContention gives the aggregator the waiters events reported for the census's locks
// whose rows lack the scanner's count (as the W column shows them: waitersOf).
func (m *Model) sampleContention() {
	fromEvents := make(map[string]int, len(m.waiters))
	for key, n := range m.waiters {
		if at, ok := m.locks.find("", key); ok && m.locks.rows[at].flags&rowHasWaiters == 0 {
			fromEvents[key] = n
		}
	}
	m.contention.sample(fromEvents)
}
