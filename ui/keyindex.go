package ui

import "hash/maphash"

// keyIndex finds a lock's position in a lockSet's rows by its id (see lockID). It is a
// linear-probing hash table of positions only (the ids are in the rows it points to): 4 bytes
// a slot, 8 MB for a million locks, where a map[string]int took 60 MB. A slot's home is the
// hash of the key alone, so the locks of one key on several independent servers share a
// probe run.
type keyIndex struct {
	seed     maphash.Seed
	slots    []int32 // position+1 in rows; 0: free
	n        int
	byServer bool // ids are server and key (lockID)
}

func newKeyIndex(byServer bool) keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), slots: make([]int32, 16), byServer: byServer}
}

func (x *keyIndex) home(key string) int {
	return int(maphash.String(x.seed, key) & uint64(len(x.slots)-1))
}

// slot is where id is, or the free slot where it would go.
func (x *keyIndex) slot(id string, rows []*lockRow) int {
	if x.byServer {
		return x.slotOn(id, rows)
	}
	i := x.home(id)
	for x.slots[i] != 0 && rows[x.slots[i]-1].key != id {
		i = (i + 1) & (len(x.slots) - 1)
	}
	return i
}

// slotOn is slot for an id of independent servers (server and key).
func (x *keyIndex) slotOn(id string, rows []*lockRow) int {
	addr, key := splitLockID(id)
	i := x.home(key)
	for x.slots[i] != 0 {
		if r := rows[x.slots[i]-1]; r.key == key && r.kind.addr == addr {
			break
		}
		i = (i + 1) & (len(x.slots) - 1)
	}
	return i
}

// find is id's position in rows.
func (x *keyIndex) find(id string, rows []*lockRow) (int, bool) {
	p := x.slots[x.slot(id, rows)]
	return int(p) - 1, p != 0
}

// hasKey reports whether a row of rows has key, on any server.
func (x *keyIndex) hasKey(key string, rows []*lockRow) bool {
	for i := x.home(key); x.slots[i] != 0; i = (i + 1) & (len(x.slots) - 1) {
		if rows[x.slots[i]-1].key == key {
			return true
		}
	}
	return false
}

// set records that id is at position at (rows[at] must already be its row).
func (x *keyIndex) set(id string, at int, rows []*lockRow) {
	i := x.slot(id, rows)
	if x.slots[i] == 0 {
		x.n++
	}
	x.slots[i] = int32(at + 1)
	if x.n*4 > len(x.slots)*3 { // over 3/4 full: double
		old := x.slots
		x.slots = make([]int32, 2*len(old))
		mask := len(x.slots) - 1
		for _, p := range old {
			if p != 0 { // the ids are distinct: the first free slot of the run is its
				i := x.home(rows[p-1].key)
				for x.slots[i] != 0 {
					i = (i + 1) & mask
				}
				x.slots[i] = p
			}
		}
	}
}

// delete forgets id, moving later entries of its probe run back into the gap so that every
// id stays reachable from its home slot.
func (x *keyIndex) delete(id string, rows []*lockRow) {
	i := x.slot(id, rows)
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
