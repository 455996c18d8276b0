package exporter

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// entry is what the metrics need of one lock, and nothing else: no key (the table has it
// once), no value, no holder. 32 bytes.
type entry struct {
	expires  int64 // unix ns on the local clock when the TTL runs out (unless entryNoExpiry)
	acquired int64 // unix ns on the local clock when it was taken, or first seen held by holder (if entryAcquired)
	waiters  int32
	holder   uint32 // a hash of the holder's identity (if entrySeenSince)
	gen      uint32 // the last pass that saw the lock
	group    uint16 // index into census.groups
	format   uint8  // index into census.formats
	flags    uint8
}

const (
	entryNoExpiry uint8 = 1 << iota
	entryAcquired
	entryNoQuorum // Redlock: fewer than N/2+1 instances hold the lock's value
	entryNotALock // a list, set, ... under the pattern: counted by its format only
	// entrySeenSince: the format carries no acquisition stamp, so acquired is when this
	// exporter first saw the lock held by holder: its age is a lower bound.
	entrySeenSince
	// entryUntimed: a semaphore whose key has no TTL, by design (Redisson's): neither a lock
	// without expiry nor a TTL in the histogram.
	entryUntimed
	// entryMaybeSemaphore: a lock without expiry (entryNoExpiry) whose value is also a Redisson
	// RSemaphore's count (scanner.Lock.MaybeNaiveLock), so that alerts can tell them apart.
	entryMaybeSemaphore
)

// maxGroups bounds --max-groups: a group index is an entry's uint16, and Other needs one.
const maxGroups = math.MaxUint16 - 1

// census is the live census in compact form: one entry per lock, kept in a dense slice so
// that a scrape walks memory in order (at a million locks a map walk costs several times
// more), with an index by lock id. A lock id is its key, or on independent servers its
// server and key (the same key on two of them is two locks).
type census struct {
	rule     keygroup.Rule
	folder   *keygroup.Folder
	byServer bool

	index   map[string]int32 // lock id → position in ids and entries
	ids     []string
	entries []entry
	peak    int // the most locks since the index was last built: a Go map never shrinks

	groups   []string // the groups through the folder, keygroup.Other among them once seen
	groupIdx map[string]uint16
	formats  []scanner.Format
	format   map[scanner.Format]uint8
}

func newCensus(rule keygroup.Rule, maxGroups int, byServer bool) *census {
	return &census{rule: rule, folder: keygroup.NewFolder(maxGroups), byServer: byServer,
		index: map[string]int32{}, groupIdx: map[string]uint16{}, format: map[scanner.Format]uint8{}}
}

// id is l's lock id.
func (c *census) id(l *scanner.Lock) string {
	if c.byServer {
		return l.Addr + "\x00" + l.Key
	}
	return l.Key
}

// apply merges a batch read by pass gen: a record replaces its lock's entry, a gone one
// removes it. ahead is how far l's server clock is ahead of the local one (its acquisition
// stamp is on that clock).
func (c *census) apply(locks []scanner.Lock, gen uint64, ahead func(*scanner.Lock) time.Duration) {
	g := uint32(min(gen, math.MaxUint32))
	for i := range locks {
		l := &locks[i]
		id := c.id(l)
		at, ok := c.index[id]
		if l.Gone {
			if ok {
				c.remove(at)
			}
			continue
		}
		e := entry{waiters: int32(min(l.Waiters, math.MaxInt32)), gen: g, format: c.formatOf(l.Format)}
		if ok {
			e.group = c.entries[at].group // a lock's key, and so its folded group, never changes
		} else {
			e.group = c.groupOf(l.Key)
		}
		if l.Format == scanner.FormatNotALock {
			e.flags |= entryNotALock
		}
		switch {
		case present.NeverFrees(l) && l.MaybeNaiveLock():
			e.flags |= entryNoExpiry | entryMaybeSemaphore
		case present.NeverFrees(l):
			e.flags |= entryNoExpiry
		case l.NoExpiry:
			e.flags |= entryUntimed
		default:
			e.expires = l.FetchedAt.Add(l.TTL).UnixNano()
		}
		if l.Quorum != nil && !l.Quorum.Reached {
			e.flags |= entryNoQuorum
		}
		if !l.AcquiredAt.IsZero() {
			e.flags |= entryAcquired
			e.acquired = l.AcquiredAt.Add(-ahead(l)).UnixNano()
		} else if h, known := holderHash(l); known && l.Format != scanner.FormatNotALock && !l.IsSemaphore() {
			// (A semaphore is never stuck as a whole: its permits come and go, or are
			// unknown, and an unchanged count says nothing of who holds them.)
			e.flags |= entryAcquired | entrySeenSince
			e.holder, e.acquired = h, l.FetchedAt.UnixNano()
			if ok && c.entries[at].flags&entrySeenSince != 0 && c.entries[at].holder == h {
				e.acquired = c.entries[at].acquired // the same holder still: held since first seen
			}
		}
		if !l.HasWaiters {
			e.waiters = 0 // unknown counts as none in a sum
		}
		if ok {
			e.gen = max(e.gen, c.entries[at].gen)
			c.entries[at] = e
			continue
		}
		// The batch's key may share memory with a larger read; the table keeps its own copy.
		id = strings.Clone(id)
		c.index[id] = int32(len(c.ids))
		c.ids = append(c.ids, id)
		c.entries = append(c.entries, e)
		c.peak = max(c.peak, len(c.ids))
	}
}

// holderHash identifies the holder of a lock whose format has no acquisition stamp
// (scanner.Holder: Redisson's owner ids, else the value, a token that stays while its holder
// renews). Not known without a value (no permission to read it).
func holderHash(l *scanner.Lock) (uint32, bool) {
	holder := scanner.Holder(l.Format, l.Value, l.Owners)
	if holder == "" {
		return 0, false
	}
	return fnvAdd(fnvOffset, holder), true
}

// FNV-1a, 32 bits, without hash/fnv's allocation per lock.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

func fnvAdd(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnvPrime
	}
	return h
}

// prune removes the locks that pass gen did not see: gone between passes unheard.
func (c *census) prune(gen uint64) {
	g := uint32(min(gen, math.MaxUint32))
	for i := 0; i < len(c.entries); {
		if c.entries[i].gen < g {
			c.remove(int32(i)) // moves the last entry here: look at i again
			continue
		}
		i++
	}
	c.shrink()
}

// shrinkBelow is the share of its peak the census must fall under before its index and
// slices are built again at their size; shrinkMin the peak below which it does not matter.
const (
	shrinkBelow = 4
	shrinkMin   = 1 << 14
)

// shrink gives memory back after the census fell far below its peak (a million locks
// released): the map and the slices would otherwise keep their peak size for good.
func (c *census) shrink() {
	if c.peak < shrinkMin || len(c.ids)*shrinkBelow > c.peak {
		return
	}
	c.ids, c.entries = slices.Clone(c.ids), slices.Clone(c.entries)
	c.index = make(map[string]int32, len(c.ids))
	for i, id := range c.ids {
		c.index[id] = int32(i)
	}
	c.peak = len(c.ids)
}

// remove deletes the entry at position at, moving the last one into its place.
func (c *census) remove(at int32) {
	last := int32(len(c.ids) - 1)
	delete(c.index, c.ids[at])
	if at != last {
		c.ids[at], c.entries[at] = c.ids[last], c.entries[last]
		c.index[c.ids[at]] = at
	}
	c.ids[last] = ""
	c.ids, c.entries = c.ids[:last], c.entries[:last]
}

// groupOf is the index of key's group after folding.
func (c *census) groupOf(key string) uint16 {
	g := c.folder.Fold(c.rule.Group(key))
	if i, ok := c.groupIdx[g]; ok {
		return i
	}
	g = strings.Clone(g) // a part of the key: do not keep the key alive through it
	i := uint16(len(c.groups))
	c.groups = append(c.groups, g)
	c.groupIdx[g] = i
	return i
}

// formatOf is the index of format; the decoders have a handful of formats.
func (c *census) formatOf(f scanner.Format) uint8 {
	if i, ok := c.format[f]; ok {
		return i
	}
	if len(c.formats) == math.MaxUint8 {
		return 0 // out of room: never with the decoders' formats
	}
	i := uint8(len(c.formats))
	c.formats = append(c.formats, f)
	c.format[f] = i
	return i
}
