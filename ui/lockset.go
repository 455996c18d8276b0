package ui

import (
	"slices"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// lockSet is the census as the scanner delivered it: the newest record of every key, and the
// pass that last saw it. It is a slice plus a position map, so one batch costs O(batch), a pass
// end costs one sweep, and a snapshot for the view index is one copy of pointers.
// Records are never changed in place (a newer record replaces the pointer), so a snapshot can
// be read by a command while Update goes on applying batches.
type lockSet struct {
	locks []*scanner.Lock
	gens  []uint64        // gens[i]: the last pass that saw locks[i]
	spans []time.Duration // spans[i]: the longest TTL seen for locks[i]'s current holder
	pos   map[string]int
}

func newLockSet() lockSet { return lockSet{pos: map[string]int{}} }

func (s *lockSet) len() int { return len(s.locks) }

// get is the newest record of key, or nil.
func (s *lockSet) get(key string) *scanner.Lock {
	if i, ok := s.pos[key]; ok {
		return s.locks[i]
	}
	return nil
}

// span is the longest TTL seen for key's current value: Redis does not keep the TTL a lock
// was taken with, so this high-water mark (reached again at every watchdog renewal) is the
// measure the TTL bar draws the remaining time against.
func (s *lockSet) span(key string) time.Duration {
	if i, ok := s.pos[key]; ok {
		return s.spans[i]
	}
	return 0
}

// apply merges one batch seen by pass gen; gone records remove their key.
func (s *lockSet) apply(batch []scanner.Lock, gen uint64) {
	for i := range batch {
		l := &batch[i]
		if l.Gone {
			s.remove(l.Key)
			continue
		}
		if at, ok := s.pos[l.Key]; ok {
			if s.locks[at].Value == l.Value {
				s.spans[at] = max(s.spans[at], l.TTL)
			} else {
				s.spans[at] = l.TTL // a new holder: a new lifetime
			}
			s.locks[at] = l
			s.gens[at] = max(s.gens[at], gen)
			continue
		}
		s.pos[l.Key] = len(s.locks)
		s.locks = append(s.locks, l)
		s.gens = append(s.gens, gen)
		s.spans = append(s.spans, l.TTL)
	}
}

// remove drops key (swap with the last element: O(1)).
func (s *lockSet) remove(key string) {
	at, ok := s.pos[key]
	if !ok {
		return
	}
	last := len(s.locks) - 1
	if at != last {
		s.locks[at], s.gens[at], s.spans[at] = s.locks[last], s.gens[last], s.spans[last]
		s.pos[s.locks[at].Key] = at
	}
	s.locks[last] = nil
	s.locks, s.gens, s.spans = s.locks[:last], s.gens[:last], s.spans[:last]
	delete(s.pos, key)
}

// prune drops every key that pass gen did not see (the pass is complete, so they are gone)
// and returns how many it dropped.
func (s *lockSet) prune(gen uint64) int {
	dropped := 0
	for i := 0; i < len(s.locks); {
		if s.gens[i] >= gen {
			i++
			continue
		}
		s.remove(s.locks[i].Key) // moves the last element to i: look at i again
		dropped++
	}
	return dropped
}

// snapshot is a copy of the record pointers for a view index built off the update loop.
func (s *lockSet) snapshot() []*scanner.Lock { return slices.Clone(s.locks) }
