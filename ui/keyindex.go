package ui

import "hash/maphash"

// keyIndex finds a key's position in a lockSet's rows. It is a linear-probing hash table of
// positions only (the keys are in the rows it points to): 4 bytes a slot, 8 MB for a million
// locks, where a map[string]int took 60 MB.
type keyIndex struct {
	seed  maphash.Seed
	slots []int32 // position+1 in rows; 0: free
	n     int
}

func newKeyIndex() keyIndex { return keyIndex{seed: maphash.MakeSeed(), slots: make([]int32, 16)} }

func (x *keyIndex) home(key string) int {
	return int(maphash.String(x.seed, key) & uint64(len(x.slots)-1))
}

// slot is where key is, or the free slot where it would go.
func (x *keyIndex) slot(key string, rows []*lockRow) int {
	i := x.home(key)
	for x.slots[i] != 0 && rows[x.slots[i]-1].key != key {
		i = (i + 1) & (len(x.slots) - 1)
	}
	return i
}

// find is key's position in rows.
func (x *keyIndex) find(key string, rows []*lockRow) (int, bool) {
	p := x.slots[x.slot(key, rows)]
	return int(p) - 1, p != 0
}

// set records that key is at position at (rows[at] must already be its row).
func (x *keyIndex) set(key string, at int, rows []*lockRow) {
	i := x.slot(key, rows)
	if x.slots[i] == 0 {
		x.n++
	}
	x.slots[i] = int32(at + 1)
	if x.n*4 > len(x.slots)*3 { // over 3/4 full: double
		old := x.slots
		x.slots = make([]int32, 2*len(old))
		for _, p := range old {
			if p != 0 {
				x.slots[x.slot(rows[p-1].key, rows)] = p
			}
		}
	}
}

// delete forgets key, moving later entries of its probe run back into the gap so that every
// key stays reachable from its home slot.
func (x *keyIndex) delete(key string, rows []*lockRow) {
	i := x.slot(key, rows)
	if x.slots[i] == 0 {
		return
	}
	x.n--
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the gap at i if its home is not in the run (i, j].
		if h := x.home(rows[x.slots[j]-1].key); (j-h)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
}
