package ui

import "hash/maphash"

// keyIndex finds a lock's position in a lockSet's rows by its key and, of independent
// servers (byServer: see lockID), its server; without byServer the server is not looked at.
// It is a linear-probing hash table of positions only (keys and servers are in the rows it
// points to): 4 bytes a slot, 8 MB for a million locks, where a map[string]int took 60 MB. A
// slot's home is the hash of the key alone, so the locks of one key on several independent
// servers share a probe run.
type keyIndex struct {
	seed     maphash.Seed
	slots    []int32 // position+1 in rows; 0: free
	n        int
	byServer bool // a lock is its server and key (lockID)
}

func newKeyIndex(byServer bool) keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), slots: make([]int32, 16), byServer: byServer}
}

func (x *keyIndex) home(key string) int {
	return int(maphash.String(x.seed, key) & uint64(len(x.slots)-1))
}

// slot is where the lock of key (on server addr, when byServer) is, or the free slot where
// it would go.
func (x *keyIndex) slot(addr, key string, rows []*lockRow) int {
	i := x.home(key)
	for x.slots[i] != 0 {
		if r := rows[x.slots[i]-1]; r.key == key && (!x.byServer || r.kind.addr == addr) {
			break
		}
		i = (i + 1) & (len(x.slots) - 1)
	}
	return i
}

// find is the position in rows of the lock of key (on server addr, when byServer).
func (x *keyIndex) find(addr, key string, rows []*lockRow) (int, bool) {
	p := x.slots[x.slot(addr, key, rows)]
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

// set records that the lock of key (on server addr, when byServer) is at position at
// (rows[at] must already be its row).
func (x *keyIndex) set(addr, key string, at int, rows []*lockRow) {
	i := x.slot(addr, key, rows)
	if x.slots[i] == 0 {
		x.n++
	}
	x.slots[i] = int32(at + 1)
	if x.n*4 > len(x.slots)*3 { // over 3/4 full: double
		old := x.slots
		x.slots = make([]int32, 2*len(old))
		mask := len(x.slots) - 1
		for _, p := range old {
			if p != 0 { // the locks are distinct: the first free slot of the run is its
				i := x.home(rows[p-1].key)
				for x.slots[i] != 0 {
					i = (i + 1) & mask
				}
				x.slots[i] = p
			}
		}
	}
}

// delete forgets the lock of key (on server addr, when byServer), moving later entries of
// its probe run back into the gap so that every lock stays reachable from its home slot.
func (x *keyIndex) delete(addr, key string, rows []*lockRow) {
	i := x.slot(addr, key, rows)
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
