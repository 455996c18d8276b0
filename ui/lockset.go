package ui

import (
	"math"
	"strings"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// lockSet is the census as the scanner delivered it: the newest row of every key, and the
// pass that last saw it. It is a slice plus a position index, so one batch costs O(batch), a
// pass end costs one sweep, and a snapshot for the view index is one copy of pointers.
// Rows are never changed once built (a newer record makes a new row), so a snapshot can be
// read by a command while Update goes on applying batches.
//
// A row is found by its lock's id (lockID): its key, or on independent servers its server and
// key.
type lockSet struct {
	rows     []*lockRow
	pos      keyIndex
	kinds    map[rowKind]*rowKind
	fetched  *time.Time // the newest FetchedAt: the rows of one pass share it
	byServer bool       // independent servers: ids are server and key
	// watch, when set, is told of every change of a row: old nil for a new lock, new nil for
	// one that left (the contention overview counts from it).
	watch func(old, new *lockRow)
}

// lockID is a lock's identity in the console: its key, or on independent servers (byServer),
// where a key names one lock on each server that has it, its server and key joined by a NUL
// (no address holds one).
func lockID(addr, key string, byServer bool) string {
	if !byServer {
		return key
	}
	return addr + "\x00" + key
}

// splitLockID is the server and key of an id made with byServer.
func splitLockID(id string) (addr, key string) {
	addr, key, _ = strings.Cut(id, "\x00")
	return addr, key
}

// goneLock is the record of a lock known only by its id: gone from the census.
func goneLock(id string, byServer bool) *scanner.Lock {
	if !byServer {
		return &scanner.Lock{Key: id, Gone: true}
	}
	addr, key := splitLockID(id)
	return &scanner.Lock{Key: key, Addr: addr, Gone: true}
}

// rowKey is the id of a row of a set without byServer; rowKeyOnServer with it.
func rowKey(r *lockRow) string         { return r.key }
func rowKeyOnServer(r *lockRow) string { return lockID(r.kind.addr, r.key, true) }

// rowIDs is how the rows of a set with or without byServer are identified.
func rowIDs(byServer bool) func(*lockRow) string {
	if byServer {
		return rowKeyOnServer
	}
	return rowKey
}

// lockRow is the console's copy of one scanner.Lock, about half its size and in an
// allocation of its own. Keeping the scanner's records themselves kept each batch's whole
// array alive as long as one of its records was in the set or in a view index, which at a
// million locks meant up to two passes of 232-byte records at once. lock gives the record
// back, field for field.
type lockRow struct {
	key, value string
	kind       *rowKind
	fetched    *time.Time
	acquired   int64         // AcquiredAt in unix ns, when rowAcquired is set
	ttl        time.Duration // as read
	span       time.Duration // the longest TTL seen for this holder (see lockSet.span)
	fence      int64
	reentry    int
	waiters    int
	rare       *rareFields // nil unless the record has fields the compact form does not hold
	gen        uint32      // the last pass that saw the key (passes count from 1, one per second at most)
	// Node and Trace are value[nodeAt:nodeAt+nodeLen] and value[traceAt:traceAt+traceLen]
	// (the decoders cut them out of the value) unless rare says otherwise.
	nodeAt, nodeLen, traceAt, traceLen uint16
	flags                              rowFlags
}

// rowKind is what a whole census has only a few distinct values of.
type rowKind struct {
	format scanner.Format
	typ    string
	addr   string
}

// rareFields are the fields most locks do not have: redisson's owners, a Redlock quorum, a
// shared primitive's holders (scanner.Shared), a holder or trace that is not a part of the value, an acquisition time that unix
// nanoseconds do not give back exactly.
type rareFields struct {
	owners      []scanner.Owner
	quorum      *scanner.Quorum
	shared      *scanner.Shared
	node, trace string
	ownText     bool // node and trace are here, not in the value
	acquiredAt  time.Time
}

type rowFlags uint8

const (
	rowNoExpiry rowFlags = 1 << iota
	rowHasFence
	rowHasWaiters
	rowTruncated
	rowAcquired    // acquired holds AcquiredAt
	rowAcquiredUTC // in UTC rather than local time
)

// newLockSet is an empty set; byServer for independent servers (see lockID).
func newLockSet(byServer bool) lockSet {
	return lockSet{pos: newKeyIndex(byServer), kinds: map[rowKind]*rowKind{}, byServer: byServer}
}

func (s *lockSet) len() int { return len(s.rows) }

// id is l's id in the set.
func (s *lockSet) id(l *scanner.Lock) string { return lockID(l.Addr, l.Key, s.byServer) }

// split is the server and key of the lock id of the set (no server without byServer).
func (s *lockSet) split(id string) (addr, key string) {
	if !s.byServer {
		return "", id
	}
	return splitLockID(id)
}

// find is the position of the lock of key, on server addr of independent servers (byServer),
// in the rows: the set looks its locks up by their parts, without building their ids.
func (s *lockSet) find(addr, key string) (int, bool) { return s.pos.find(addr, key, s.rows) }

// get is the newest record of the lock id, or nil.
func (s *lockSet) get(id string) *scanner.Lock {
	if i, ok := s.find(s.split(id)); ok {
		return s.rows[i].lock()
	}
	return nil
}

// hasKey reports whether key is a lock of the set, on any server.
func (s *lockSet) hasKey(key string) bool { return s.pos.hasKey(key, s.rows) }

// span is the longest TTL seen for l's current value: Redis does not keep the TTL a lock
// was taken with, so this high-water mark (reached again at every watchdog renewal) is the
// measure the TTL bar draws the remaining time against.
func (s *lockSet) span(l *scanner.Lock) time.Duration {
	if i, ok := s.find(l.Addr, l.Key); ok {
		return s.rows[i].span
	}
	return 0
}

// apply merges one batch seen by pass gen; gone records remove their lock.
func (s *lockSet) apply(batch []scanner.Lock, gen uint64) {
	for i := range batch {
		l := &batch[i]
		at, ok := s.find(l.Addr, l.Key)
		switch {
		case l.Gone:
			if ok {
				s.removeAt(at)
			}
			continue
		case !ok:
			r := s.newRow(l, nil, gen)
			s.rows = append(s.rows, r)
			s.pos.set(l.Addr, l.Key, len(s.rows)-1, s.rows)
			if s.watch != nil {
				s.watch(nil, r)
			}
			continue
		}
		old := s.rows[at]
		s.rows[at] = s.newRow(l, old, gen)
		if s.watch != nil {
			s.watch(old, s.rows[at])
		}
	}
}

// newRow is l's row, replacing old (nil for a new key): the strings old already has are kept
// (the batch's copies are left to the collector at once), and so are its TTL high-water mark
// and its pass while the holder has not changed.
func (s *lockSet) newRow(l *scanner.Lock, old *lockRow, gen uint64) *lockRow {
	r := &lockRow{key: l.Key, value: l.Value, ttl: l.TTL, span: l.TTL, fence: l.Fence, reentry: l.Reentry,
		waiters: l.Waiters, gen: uint32(min(gen, math.MaxUint32))}
	if old != nil {
		r.key, r.gen = old.key, max(r.gen, old.gen)
		if old.value == l.Value {
			r.value, r.span = old.value, max(old.span, l.TTL)
		}
	}
	kind := rowKind{format: l.Format, typ: l.Type, addr: l.Addr}
	if r.kind = s.kinds[kind]; r.kind == nil {
		r.kind = &kind
		s.kinds[kind] = r.kind
	}
	if s.fetched == nil || *s.fetched != l.FetchedAt {
		at := l.FetchedAt
		s.fetched = &at
	}
	r.fetched = s.fetched
	for _, f := range []struct {
		on   bool
		flag rowFlags
	}{{l.NoExpiry, rowNoExpiry}, {l.HasFence, rowHasFence}, {l.HasWaiters, rowHasWaiters}, {l.Truncated, rowTruncated}} {
		if f.on {
			r.flags |= f.flag
		}
	}
	var acquiredAt time.Time // when unix nanoseconds do not give it back exactly
	if !l.AcquiredAt.IsZero() {
		ns := l.AcquiredAt.UnixNano()
		switch at := time.Unix(0, ns); l.AcquiredAt {
		case at: // decoded values are local times
			r.acquired, r.flags = ns, r.flags|rowAcquired
		case at.UTC():
			r.acquired, r.flags = ns, r.flags|rowAcquired|rowAcquiredUTC
		default:
			acquiredAt = l.AcquiredAt
		}
	}
	var nodeOK, traceOK bool
	r.nodeAt, r.nodeLen, nodeOK = partOf(r.value, l.Node)
	r.traceAt, r.traceLen, traceOK = partOf(r.value, l.Trace)
	ownText := !nodeOK || !traceOK
	if ownText || l.Owners != nil || l.Quorum != nil || l.Shared != nil || !acquiredAt.IsZero() {
		r.rare = &rareFields{owners: l.Owners, quorum: l.Quorum, shared: l.Shared, acquiredAt: acquiredAt, ownText: ownText}
		if ownText {
			r.rare.node, r.rare.trace = l.Node, l.Trace
		}
	}
	return r
}

// partOf finds part in value, as offsets that fit a row.
func partOf(value, part string) (at, n uint16, ok bool) {
	if part == "" {
		return 0, 0, true
	}
	i := strings.Index(value, part)
	if i < 0 || i+len(part) > math.MaxUint16 {
		return 0, 0, false
	}
	return uint16(i), uint16(len(part)), true
}

func (r *lockRow) node() string {
	if r.rare != nil && r.rare.ownText {
		return r.rare.node
	}
	return r.value[r.nodeAt : r.nodeAt+r.nodeLen]
}

func (r *lockRow) trace() string {
	if r.rare != nil && r.rare.ownText {
		return r.rare.trace
	}
	return r.value[r.traceAt : r.traceAt+r.traceLen]
}

// lock is the record r was built from.
func (r *lockRow) lock() *scanner.Lock {
	l := new(scanner.Lock)
	r.fill(l)
	return l
}

// fill writes the record r was built from into l: a scratch record for the checks that take
// one, without an allocation per row.
func (r *lockRow) fill(l *scanner.Lock) {
	*l = scanner.Lock{Key: r.key, Format: r.kind.format, Type: r.kind.typ, Addr: r.kind.addr,
		Node: r.node(), Trace: r.trace(), Reentry: r.reentry, TTL: r.ttl, FetchedAt: *r.fetched,
		Fence: r.fence, Waiters: r.waiters, Value: r.value,
		NoExpiry: r.flags&rowNoExpiry != 0, HasFence: r.flags&rowHasFence != 0,
		HasWaiters: r.flags&rowHasWaiters != 0, Truncated: r.flags&rowTruncated != 0}
	if r.flags&rowAcquired != 0 {
		l.AcquiredAt = time.Unix(0, r.acquired)
		if r.flags&rowAcquiredUTC != 0 {
			l.AcquiredAt = l.AcquiredAt.UTC()
		}
	}
	if r.rare != nil {
		l.Owners, l.Quorum, l.Shared = r.rare.owners, r.rare.quorum, r.rare.shared
		if !r.rare.acquiredAt.IsZero() {
			l.AcquiredAt = r.rare.acquiredAt
		}
	}
}

// remove drops the lock id (swap with the last element: O(1)).
func (s *lockSet) remove(id string) {
	if at, ok := s.find(s.split(id)); ok {
		s.removeAt(at)
	}
}

// removeAt drops the row at position at, moving the last row there.
func (s *lockSet) removeAt(at int) {
	r := s.rows[at]
	s.pos.delete(r.kind.addr, r.key, s.rows)
	last := len(s.rows) - 1
	if at != last {
		s.rows[at] = s.rows[last]
		s.pos.set(s.rows[at].kind.addr, s.rows[at].key, at, s.rows)
	}
	s.rows[last] = nil
	s.rows = s.rows[:last]
	if s.watch != nil {
		s.watch(r, nil)
	}
}

// prune drops every key that pass gen did not see (the pass is complete, so they are gone),
// telling gone (nil: nobody) about each, and returns how many it dropped.
func (s *lockSet) prune(gen uint64, gone func(*lockRow)) int {
	dropped := 0
	for i := 0; i < len(s.rows); {
		if uint64(s.rows[i].gen) >= gen {
			i++
			continue
		}
		if gone != nil {
			gone(s.rows[i])
		}
		s.removeAt(i) // moves the last element to i: look at i again
		dropped++
	}
	return dropped
}

// snapshot is a copy of the row pointers for a view index built off the update loop.
func (s *lockSet) snapshot() []*lockRow { return append([]*lockRow(nil), s.rows...) }
