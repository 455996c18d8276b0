package scanner

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// dropRepeats removes the later records of a key that appears more than once (SCAN returns
// a key again when the server resizes its table mid-scan, and a cluster key migrating
// between masters may be seen on both), keeping scan order. It costs one 32-bit hash per
// key, sorted: 4 bytes a key for a moment (it runs at the census's peak of memory), where a
// set of every key held during the pass cost ~45 bytes a key and a map operation per key.
// Equal hashes are only candidates (about a hundred among a million distinct keys): the
// keys themselves are compared before a record is dropped.
//
// byServer makes a lock's identity its server and key (independent servers: the same key on
// two of them is two locks).
func dropRepeats(locks []Lock, byServer bool) []Lock {
	if len(locks) < 2 {
		return locks
	}
	seed := maphash.MakeSeed()
	hash := func(l *Lock) uint32 { return uint32(maphash.String(seed, l.Key)) }
	if byServer {
		hash = func(l *Lock) uint32 { return uint32(maphash.Comparable(seed, identity{l.Addr, l.Key})) }
	}
	hashes := make([]uint32, len(locks))
	for i := range locks {
		hashes[i] = hash(&locks[i])
	}
	slices.Sort(hashes)
	var candidates map[uint32]bool
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] {
			if candidates == nil {
				candidates = map[uint32]bool{}
			}
			candidates[hashes[i]] = true
		}
	}
	if candidates == nil {
		return locks // the common case: no repeats
	}
	seen := map[identity]bool{}
	kept := locks[:0]
	for i := range locks {
		if candidates[hash(&locks[i])] {
			id := identity{key: locks[i].Key}
			if byServer {
				id.addr = locks[i].Addr
			}
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		kept = append(kept, locks[i])
	}
	clear(locks[len(kept):])
	return kept
}

// identity is what tells two locks apart where the key alone does not: on independent
// servers, the server and the key.
type identity struct{ addr, key string }

// digestSet drops repeated keys as they come, where a whole census is not kept to drop them
// afterwards (CensusEach). It remembers each key by a 128-bit digest (two seeded 64-bit
// hashes) in an open-addressing table of its own: 16 to 32 bytes a key that the collector
// need not scan, where a set of the keys cost ~60 bytes a key and kept every key string
// alive, and a Go map of the digests took 2.6 s for a million keys (measured; the table,
// whose keys are hashes already, probes once). Two distinct keys of a million share a digest
// with a probability of about 10⁻²⁷.
type digestSet struct {
	seeds    [2]maphash.Seed
	slots    [][2]uint64 // a power of two, at most half full; {0, 0} is free
	n        int
	byServer bool // a lock's identity is its server and key (see dropRepeats)
}

func newDigestSet(byServer bool) *digestSet {
	return &digestSet{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, slots: make([][2]uint64, 1024), byServer: byServer}
}

// expect sizes the set for about n keys (0: unknown yet), unless some are in it already:
// growing to a million step by step costs more than the lookups.
func (d *digestSet) expect(n int) {
	if 2*n > len(d.slots) {
		d.resize(1 << bits.Len(uint(2*n)))
	}
}

// resize moves the digests into a table of size slots.
func (d *digestSet) resize(slots int) {
	old := d.slots
	d.slots, d.n = make([][2]uint64, slots), 0
	for _, digest := range old {
		if digest != ([2]uint64{}) {
			d.add(digest)
		}
	}
}

// dropSeen removes from locks, in place, the keys seen before (in locks or earlier calls).
func (d *digestSet) dropSeen(locks []Lock) []Lock {
	kept := locks[:0]
	for i := range locks {
		digest := [2]uint64{maphash.String(d.seeds[0], locks[i].Key), maphash.String(d.seeds[1], locks[i].Key) | 1} // never {0, 0}
		if d.byServer {
			id := identity{locks[i].Addr, locks[i].Key}
			digest = [2]uint64{maphash.Comparable(d.seeds[0], id), maphash.Comparable(d.seeds[1], id) | 1}
		}
		if d.add(digest) {
			kept = append(kept, locks[i])
		}
	}
	clear(locks[len(kept):])
	return kept
}

// add puts digest in the set and reports whether it was new.
func (d *digestSet) add(digest [2]uint64) bool {
	if 2*(d.n+1) > len(d.slots) {
		d.resize(2 * len(d.slots))
	}
	mask := uint64(len(d.slots) - 1)
	for i := digest[0] & mask; ; i = (i + 1) & mask {
		switch d.slots[i] {
		case digest:
			return false
		case [2]uint64{}:
			d.slots[i] = digest
			d.n++
			return true
		}
	}
}
