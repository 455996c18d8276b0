package ui

import (
	"slices"
	"time"
)

// The history of the locks the console watches closely, for the pictures of the detail view
// (timeline.go): who held each lock and when, what happened to its holders, its waiters. It is
// fed from the messages the root model already receives (locklib's events, the census, the
// demo's snapshots) and bounded three ways, so a census of a million locks costs it nothing
// but a map lookup per record read: only tracked keys are recorded (keys with events, keys on
// screen, the demo's), at most historyKeys of them (the least recently touched goes), and per
// key a fixed window of time and fixed-size logs.
const (
	historyWindow  = 5 * time.Minute // how far back a picture goes
	historyKeys    = 256             // keys tracked at once
	historySpans   = 256             // holdings kept per key (a busy demo lock has ~5 a second)
	historyMarks   = 64              // marks kept per key
	historySamples = 512             // waiter counts kept per key
)

// spanEnd is how a holding ended.
type spanEnd uint8

const (
	endOpen     spanEnd = iota // still held
	endReleased                // its holder released it (a released event)
	endLost                    // its holder learnt it was lost (a lost event)
	endExpired                 // its TTL ran out: the next holder came after its expiry, or the census found the key gone then
	endReplaced                // the census found another holder's value in the key
	endGone                    // the census found the key gone
)

// holdSpan is one holding of a lock, from when it was obtained to when it ended. Holdings seen
// in Redis (events, the census) never overlap: the key has one value at a time. A demo worker's
// section is its worker's view: it may go on after Redis gave the lock to another.
type holdSpan struct {
	holder string // the holder's node (or the value, when it names none)
	value  string // the lock's value: which holding this is ("" for a section)
	from   time.Time
	to     time.Time // zero while open
	// alive is when the holding expires unless renewed: the last acquire or renewal plus its
	// TTL (zero: unknown). A holding whose holder went silent ends there.
	alive time.Time
	// silent is when its holder crashed (the demo said so): from then on the lock is held by
	// nobody alive until it expires.
	silent  time.Time
	end     spanEnd
	section bool // a demo worker's critical section: from, to are its first and last sight working
	// mode is what a section's lease grants in the rw-pool demo ("read", "write", "permit"),
	// "" for a lock: readers share, permits are many (overlapping sections).
	mode string
	// sectionNo is which of its worker's sections a section is (demo.WorkerSnapshot.Holds).
	sectionNo int64
	// seen is the census's last sight of the holding: without events, it is known held from
	// its first sight to there, and its end is somewhere before the next holding's first.
	seen time.Time
	// obtained says from is when an acquired event said the holding began; else it is the
	// census's first sight, which may come before (a pass is dated by its start) or after.
	obtained bool
}

// open reports whether the holding had not ended when last heard of.
func (s *holdSpan) open() bool { return s.end == endOpen }

// until is the end of the span as drawn at now: its end; while a holding is open, now, or its
// expiry when nothing renewed it since (it is not known held after); a section's last sight.
func (s *holdSpan) until(now time.Time) time.Time {
	switch {
	case s.section || !s.open():
		return s.to
	case !s.alive.IsZero() && s.alive.Before(now):
		return s.alive
	}
	return now
}

// markKind is what a mark on the timeline says happened to a holder.
type markKind uint8

const (
	markPause markKind = iota // the holder froze (the demo's pause)
	markLost                  // locklib said the holder lost the lock
	markCrash                 // the holder crashed holding the lock (the demo's crash)
	markStale                 // a late write of the holder was refused (fencing token, owner compare)
)

// historyMark is one thing that happened to a holder of the lock at a moment.
type historyMark struct {
	at     time.Time
	kind   markKind
	holder string
}

// waiterSample is the number of waiters on a lock at a moment.
type waiterSample struct {
	at time.Time
	n  int
}

// keyHistory is one lock's recent past, oldest first in each log.
type keyHistory struct {
	spans   []holdSpan
	marks   []historyMark
	waiters []waiterSample
	touched time.Time // the newest time recorded: the least recently touched key is dropped first
	// locklib says a locklib lock had events: its values are never written twice, so the
	// census seeing one again is the same holding (see reCreated).
	locklib bool
}

// lockHistory is the history of every tracked lock, by lock id (lockID).
type lockHistory struct {
	window  time.Duration
	maxKeys int
	keys    map[string]*keyHistory
}

func newLockHistory() lockHistory {
	return lockHistory{window: historyWindow, maxKeys: historyKeys, keys: map[string]*keyHistory{}}
}

// of is the history of id, or nil when it is not tracked.
func (h *lockHistory) of(id string) *keyHistory { return h.keys[id] }

// track starts recording id (its census records too), making room by dropping the least
// recently touched key when the cap is reached; at is when the console took interest.
func (h *lockHistory) track(id string, at time.Time) *keyHistory {
	if k := h.keys[id]; k != nil {
		return k
	}
	if len(h.keys) >= h.maxKeys {
		var oldest string
		var oldestAt time.Time
		for id, k := range h.keys {
			if oldest == "" || k.touched.Before(oldestAt) {
				oldest, oldestAt = id, k.touched
			}
		}
		delete(h.keys, oldest)
	}
	k := &keyHistory{touched: at}
	h.keys[id] = k
	return k
}

// touch records that something happened to k at at, and forgets what left the window.
func (h *lockHistory) touch(k *keyHistory, at time.Time) {
	if at.After(k.touched) {
		k.touched = at
	}
	k.forget(k.touched.Add(-h.window))
}

// forget drops the closed holdings, marks and samples older than since.
func (k *keyHistory) forget(since time.Time) {
	k.spans = slices.DeleteFunc(k.spans, func(s holdSpan) bool { return !s.open() && s.to.Before(since) })
	k.marks = slices.DeleteFunc(k.marks, func(m historyMark) bool { return m.at.Before(since) })
	k.waiters = slices.DeleteFunc(k.waiters, func(w waiterSample) bool { return w.at.Before(since) })
}

// prune drops the keys nothing happened to within the window before now.
func (h *lockHistory) prune(now time.Time) {
	since := now.Add(-h.window)
	for id, k := range h.keys {
		if k.touched.Before(since) {
			delete(h.keys, id)
		}
	}
}

// held records that holder held the lock id with value at at, for ttl (0: unknown): it
// obtained it then (obtained) or renewed it. A holding not heard of before starts there (one
// obtained before the console started starts at its first renewal); the same event received
// twice changes nothing; a holding the census saw first starts when it was obtained.
func (h *lockHistory) held(id, holder, value string, at time.Time, ttl time.Duration, obtained bool) {
	k := h.track(id, at)
	k.locklib = true
	s := k.holding(value)
	if s == nil {
		k.addSpan(holdSpan{holder: holder, value: value, from: at})
		s = k.holding(value)
	}
	switch {
	case obtained && !s.obtained:
		s.from, s.obtained = at, true
		k.sortSpans()
	case at.Before(s.from) && !s.obtained:
		s.from = at
		k.sortSpans()
	}
	s = k.holding(value) // sorting moved it
	s.renew(at, ttl)
	k.silence(s)
	h.touch(k, at)
}

// ended records that the holding value of id ended at at (released or lost); hold, when not
// zero, is how long it was held, which dates a holding not seen obtained.
func (h *lockHistory) ended(id, holder, value string, at time.Time, hold time.Duration, end spanEnd) {
	k := h.track(id, at)
	k.locklib = true
	s := k.holding(value)
	if s == nil {
		k.addSpan(holdSpan{holder: holder, value: value, from: at.Add(-hold), to: at, end: end})
		s = k.holding(value)
	}
	// An event says precisely when; the census only when it noticed (later).
	if s.open() || s.end == endReplaced || s.end == endGone || at.Before(s.to) {
		s.to, s.end = at, end
	}
	if end == endLost {
		k.addMark(historyMark{at: at, kind: markLost, holder: s.holder})
	}
	k.normalize()
	h.touch(k, at)
}

// observed records a census record of a tracked lock id read at at: held by holder with value
// (acquiredAt: when the value says it was obtained, zero when unknown), with ttl left (0:
// none or unknown), and its waiters when known (waiters < 0: unknown). A value not seen before
// ends the holding before it, which the census only noticed now.
func (h *lockHistory) observed(id, holder, value string, at, acquiredAt time.Time, ttl time.Duration, waiters int) {
	k := h.keys[id]
	if k == nil {
		return
	}
	if waiters >= 0 {
		k.addWaiters(at, waiters)
	}
	switch s := k.holding(value); {
	case s == nil || s.reCreated(at, k.locklib): // new, or the key re-created with the same value
		from := at
		prev := k.lastHeld()
		switch sec := k.workerSection(holder); {
		case prev == nil && !acquiredAt.IsZero() && acquiredAt.Before(at):
			from = maxTime(acquiredAt, at.Add(-h.window)) // the first holding seen: its value dates it
		case sec != nil && sec.from.Before(at):
			// A demo worker works only once it holds the lock: before the census saw it.
			from = sec.from
			if prev != nil {
				from = maxTime(from, maxTime(prev.from, prev.seen))
			}
		}
		s := holdSpan{holder: holder, value: value, from: from, seen: at}
		s.renew(at, ttl)
		k.closeOpen(at, endReplaced, nil)
		k.addSpan(s)
	case s.open():
		s.renew(at, ttl)
		s.seen = maxTime(s.seen, at)
	case s.lostSight(at):
		s.end, s.to = endOpen, time.Time{} // lost sight of (see reCreated): still held
		s.renew(at, ttl)
		s.seen = maxTime(s.seen, at)
		k.closeOpen(at, endReplaced, s)
	}
	h.touch(k, at)
}

// gone records that the census found the tracked lock id gone at at.
func (h *lockHistory) gone(id string, at time.Time) {
	if k := h.keys[id]; k != nil {
		k.closeOpen(at, endGone, nil)
		h.touch(k, at)
	}
}

// waiting records the number of waiters on id at at (a waiting event).
func (h *lockHistory) waiting(id string, at time.Time, n int) {
	k := h.track(id, at)
	k.addWaiters(at, n)
	h.touch(k, at)
}

// mark records a mark of kind for holder on id at at. A crash also says the holder is silent
// from then on: its holding is drawn as a lock nobody alive holds until it ends.
func (h *lockHistory) mark(id, holder string, kind markKind, at time.Time) {
	k := h.track(id, at)
	for _, m := range k.marks {
		if m == (historyMark{at: at, kind: kind, holder: holder}) {
			return // the same mark twice
		}
	}
	k.addMark(historyMark{at: at, kind: kind, holder: holder})
	if kind == markCrash {
		for i := range k.spans {
			k.silence(&k.spans[i])
		}
	}
	h.touch(k, at)
}

// silence dates the crash of s's holder during s, if a crash mark says so: the mark and the
// holding's events arrive in any order.
func (k *keyHistory) silence(s *holdSpan) {
	if s.section {
		return
	}
	for _, m := range k.marks {
		if m.kind == markCrash && m.holder == s.holder && !m.at.Before(s.from) && (s.open() || m.at.Before(s.to)) {
			s.silent = m.at
			return // the first: a holder crashes once
		}
	}
}

// sectionSight is a demo worker seen in a critical section: which one of its sections (its
// count of locks obtained, which tells a new section from the same one seen again).
type sectionSight struct {
	worker  string
	section int64
	mode    string // the lease's mode in the rw-pool demo, "" for a lock (holdSpan.mode)
}

// sections records one sight of the demo's workers: at at, working lists the workers in a
// critical section on id. A section runs from its first sight to its last.
func (h *lockHistory) sections(id string, at time.Time, working []sectionSight) {
	k := h.track(id, at)
	for i := range k.spans {
		s := &k.spans[i]
		if s.section && s.open() && !slices.Contains(working, sectionSight{s.holder, s.sectionNo, s.mode}) {
			s.end = endReleased // to stays the last sight
		}
	}
	for _, w := range working {
		if s := k.openSection(w); s != nil {
			s.to = maxTime(s.to, at)
			continue
		}
		k.addSpan(holdSpan{holder: w.worker, sectionNo: w.section, mode: w.mode, from: at, to: at, section: true})
	}
	h.touch(k, at)
}

// reCreated says whether a census record of the holding's value read at at is a new holding
// with the same value: the census had found the key gone or replaced before. (One ended by an
// event and read again is a record read before the event, delivered after it. A locklib
// value is never written twice: one the census lost sight of and sees again is the same
// holding, which a pass that SCAN took past the key while it was being set misses.)
func (s *holdSpan) reCreated(at time.Time, locklib bool) bool {
	return s.lostSight(at) && !locklib
}

// lostSight says whether the census ended the holding before at: it found the key gone or
// replaced.
func (s *holdSpan) lostSight(at time.Time) bool {
	return (s.end == endGone || s.end == endReplaced) && at.After(s.to)
}

// renew moves the holding's expiry to at + ttl when that is later.
func (s *holdSpan) renew(at time.Time, ttl time.Duration) {
	if ttl > 0 {
		s.alive = maxTime(s.alive, at.Add(ttl))
	}
}

// holding is the newest holding of value in Redis, or nil.
func (k *keyHistory) holding(value string) *holdSpan {
	for i := len(k.spans) - 1; i >= 0; i-- {
		if s := &k.spans[i]; !s.section && s.value == value {
			return s
		}
	}
	return nil
}

// lastHeld is the newest holding in Redis, or nil.
func (k *keyHistory) lastHeld() *holdSpan {
	for i := len(k.spans) - 1; i >= 0; i-- {
		if !k.spans[i].section {
			return &k.spans[i]
		}
	}
	return nil
}

// workerSection is worker's open section (a demo worker's name is its node), or nil.
func (k *keyHistory) workerSection(worker string) *holdSpan {
	for i := len(k.spans) - 1; i >= 0; i-- {
		if s := &k.spans[i]; s.section && s.open() && s.holder == worker {
			return s
		}
	}
	return nil
}

// openSection is the open section seen, or nil.
func (k *keyHistory) openSection(seen sectionSight) *holdSpan {
	for i := len(k.spans) - 1; i >= 0; i-- {
		if s := &k.spans[i]; s.section && s.open() && s.holder == seen.worker && s.sectionNo == seen.section {
			return s
		}
	}
	return nil
}

// closeOpen ends the open holdings in Redis but keep (nil: none) at at (end), or at their
// expiry when that came first: the key held another value, or none, when the census looked.
func (k *keyHistory) closeOpen(at time.Time, end spanEnd, keep *holdSpan) {
	for i := range k.spans {
		s := &k.spans[i]
		if s.section || !s.open() || s == keep {
			continue
		}
		s.to, s.end = at, end
		if !s.alive.IsZero() && s.alive.Before(at) {
			s.to, s.end = maxTime(s.alive, s.from), endExpired
		}
	}
}

// addSpan adds s in order of start, dropping the oldest holding past historySpans.
func (k *keyHistory) addSpan(s holdSpan) {
	k.spans = insertByTime(k.spans, s, func(s holdSpan) time.Time { return s.from }, historySpans)
	k.normalize()
}

// sortSpans puts the holdings back in order of start after one's start moved.
func (k *keyHistory) sortSpans() {
	slices.SortStableFunc(k.spans, func(a, b holdSpan) int { return a.from.Compare(b.from) })
	k.normalize()
}

// insertByTime inserts item into items, kept in order of time (when), after the items of the
// same time, and drops the oldest past capacity. Items come mostly in order: the search from
// the end is short.
func insertByTime[T any](items []T, item T, when func(T) time.Time, capacity int) []T {
	i := len(items)
	for i > 0 && when(items[i-1]).After(when(item)) {
		i--
	}
	items = slices.Insert(items, i, item)
	if len(items) > capacity {
		items = slices.Delete(items, 0, len(items)-capacity)
	}
	return items
}

// normalize keeps the holdings in Redis one at a time, as the key holds one value at a time:
// a holding followed by another ended when the next began at the latest, or at its expiry
// when that came first (a holder that crashed or paused; events arrive in any order, and
// not all of them arrive).
func (k *keyHistory) normalize() {
	var prev *holdSpan
	for i := range k.spans {
		s := &k.spans[i]
		if s.section {
			continue
		}
		if prev != nil && (prev.open() || prev.to.After(s.from)) {
			prev.to = s.from
			if prev.open() {
				prev.end = endReplaced
			}
			if !prev.alive.IsZero() && prev.alive.Before(s.from) {
				prev.to, prev.end = maxTime(prev.alive, prev.from), endExpired
			}
		}
		prev = s
	}
}

func (k *keyHistory) addMark(m historyMark) {
	k.marks = insertByTime(k.marks, m, func(m historyMark) time.Time { return m.at }, historyMarks)
}

func (k *keyHistory) addWaiters(at time.Time, n int) {
	k.waiters = insertByTime(k.waiters, waiterSample{at: at, n: n}, func(w waiterSample) time.Time { return w.at }, historySamples)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
