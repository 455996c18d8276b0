package contend

import (
	"sync"
	"time"
)

// resource is the protected resource the holders write to, in process, and the harness's
// ledger of who held what when. With fencing it refuses a write whose token is lower than the
// newest it accepted for the key; without tokens (Redlock: Token() is 0) it checks the
// holder's lock value against the owner recorded when the holder began, the compare-and-set
// docs/redlock.md prescribes. Everything runs under one mutex, so the order of begins and
// writes it records is the order they happened in.
type resource struct {
	fenced bool
	start  time.Time

	mu             sync.Mutex
	keys           map[string]*keyState
	holders        []*holder
	staleRejected  int // refused writes of holders a later holder of the key had superseded
	staleAccepted  int // accepted writes of superseded holders: what fencing must prevent
	currentRefused int // refused writes of the newest holder of the key (a token that went back)
	regressions    int // begins whose token was not above the previous holder's
}

type keyState struct {
	holders   int   // how many began on this key
	newest    int64 // the highest token accepted (fenced)
	owner     string
	lastToken int64
}

// holder is one critical section: from its begin to its last write attempt, on the
// resource's clock.
type holder struct {
	key        string
	token      int64
	value      string
	seq        int // its rank among the key's holders, in begin order
	start, end time.Duration
}

func newResource(fenced bool) *resource {
	return &resource{fenced: fenced, start: time.Now(), keys: map[string]*keyState{}}
}

// begin registers a holder that just obtained key and makes its first write; false when that
// write was refused (the holder must stop).
func (r *resource) begin(key string, token int64, value string) (*holder, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks := r.keys[key]
	if ks == nil {
		ks = &keyState{}
		r.keys[key] = ks
	}
	if r.fenced && ks.holders > 0 && token <= ks.lastToken {
		r.regressions++
	}
	h := &holder{key: key, token: token, value: value, seq: ks.holders, start: time.Since(r.start)}
	ks.holders++
	ks.lastToken = token
	if !r.fenced {
		ks.owner = value
	}
	r.holders = append(r.holders, h)
	return h, r.writeLocked(h)
}

// write is one write of h; false when the resource refused it.
func (r *resource) write(h *holder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked(h)
}

func (r *resource) writeLocked(h *holder) bool {
	h.end = time.Since(r.start)
	ks := r.keys[h.key]
	var ok bool
	if r.fenced {
		ok = h.token >= ks.newest
		if ok {
			ks.newest = h.token
		}
	} else {
		ok = ks.owner == h.value
	}
	superseded := h.seq < ks.holders-1
	switch {
	case ok && superseded:
		r.staleAccepted++
	case !ok && superseded:
		r.staleRejected++
	case !ok:
		r.currentRefused++
	}
	return ok
}

// overlaps counts the pairs of holders of one key whose sections overlapped: what a resource
// that checks nothing would have let both write through.
func (r *resource) overlaps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	byKey := map[string][]*holder{}
	for _, h := range r.holders {
		byKey[h.key] = append(byKey[h.key], h) // in begin order
	}
	n := 0
	for _, hs := range byKey {
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if b.start < a.end {
					n++
				}
			}
		}
	}
	return n
}
