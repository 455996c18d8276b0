package scanner

import (
	"hash/maphash"
	"slices"
)

// dropRepeats removes the later records of a key that appears more than once (SCAN returns
// a key again when the server resizes its table mid-scan, and a cluster key migrating
// between masters may be seen on both), keeping scan order. It costs one 32-bit hash per
// key, sorted: 4 bytes a key for a moment (it runs at the census's peak of memory), where a
// set of every key held during the pass cost ~45 bytes a key and a map operation per key.
// Equal hashes are only candidates (about a hundred among a million distinct keys): the
// keys themselves are compared before a record is dropped.
func dropRepeats(locks []Lock) []Lock {
	if len(locks) < 2 {
		return locks
	}
	seed := maphash.MakeSeed()
	hash := func(key string) uint32 { return uint32(maphash.String(seed, key)) }
	hashes := make([]uint32, len(locks))
	for i := range locks {
		hashes[i] = hash(locks[i].Key)
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
	seen := map[string]bool{}
	kept := locks[:0]
	for i := range locks {
		if candidates[hash(locks[i].Key)] {
			if seen[locks[i].Key] {
				continue
			}
			seen[locks[i].Key] = true
		}
		kept = append(kept, locks[i])
	}
	clear(locks[len(kept):])
	return kept
}
