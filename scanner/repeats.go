package scanner

import (
	"hash/maphash"
	"slices"
)

// dropRepeats removes the later records of a key that appears more than once (SCAN returns
// a key again when the server resizes its table mid-scan, and a cluster key migrating
// between masters may be seen on both), keeping scan order. It costs one 64-bit hash per
// key, sorted: 8 bytes a key for a moment, where a set of every key held during the pass
// cost ~45 bytes a key and a map operation per key. Equal hashes are only candidates: the
// keys themselves are compared before a record is dropped.
func dropRepeats(locks []Lock) []Lock {
	if len(locks) < 2 {
		return locks
	}
	seed := maphash.MakeSeed()
	hashes := make([]uint64, len(locks))
	for i := range locks {
		hashes[i] = maphash.String(seed, locks[i].Key)
	}
	slices.Sort(hashes)
	var candidates map[uint64]bool
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] {
			if candidates == nil {
				candidates = map[uint64]bool{}
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
		if candidates[maphash.String(seed, locks[i].Key)] {
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
