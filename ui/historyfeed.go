package ui

import (
	"time"

	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// How the root model feeds the locks' history (history.go) from the messages it receives.

// recordEvent records a locklib event in its lock's history. Independent servers' events are
// left out: an event does not say which server's lock of its key it is about.
func (m *Model) recordEvent(ev protocol.Event) {
	if m.locks.byServer {
		return
	}
	at := time.UnixMilli(ev.AtMs)
	ttl := time.Duration(ev.TTLMs) * time.Millisecond
	holder := holderName(ev.Node, ev.Value)
	switch locklib.EventType(ev.Type) {
	case locklib.EventAcquired:
		m.history.held(ev.Key, holder, ev.Value, at, ttl, true)
		m.history.waiting(ev.Key, at, int(ev.Waiters))
	case locklib.EventRenewed:
		m.history.held(ev.Key, holder, ev.Value, at, ttl, false)
	case locklib.EventReleased:
		m.history.ended(ev.Key, holder, ev.Value, at, time.Duration(ev.HoldMs)*time.Millisecond, endReleased)
	case locklib.EventLost:
		m.history.ended(ev.Key, holder, ev.Value, at, time.Duration(ev.HoldMs)*time.Millisecond, endLost)
	case locklib.EventWaiting:
		m.history.waiting(ev.Key, at, int(ev.Waiters))
	}
}

// holderName is who holds a lock in the pictures: its node, else its value (a lock format
// that names no holder), which tells holdings apart at least.
func holderName(node, value string) string {
	if node != "" {
		return node
	}
	return value
}

// recordCensus records the census records of the tracked locks: one map lookup per record,
// nothing for the others (a pass of a million locks goes through here).
func (m *Model) recordCensus(batch []scanner.Lock) {
	if len(m.history.keys) == 0 {
		return
	}
	for i := range batch {
		l := &batch[i]
		id := m.locks.id(l)
		if m.history.of(id) == nil {
			continue
		}
		m.recordLock(id, l)
	}
}

// recordLock records one census record of the tracked lock id.
func (m *Model) recordLock(id string, l *scanner.Lock) {
	if l.Gone {
		m.history.gone(id, l.FetchedAt)
		return
	}
	waiters := -1
	if l.HasWaiters {
		waiters = l.Waiters
	}
	ttl := l.TTL
	if l.NoExpiry {
		ttl = 0
	}
	m.history.observed(id, holderName(l.Node, l.Value), l.Value, l.FetchedAt, l.AcquiredAt, ttl, waiters)
}

// rowGoneAt is what a complete pass started at at not seeing a lock means: gone for the
// fence-jump rule, and for the lock's history by then.
func (m *Model) rowGoneAt(at time.Time) func(r *lockRow) {
	return func(r *lockRow) {
		m.prunedRow(r)
		m.history.gone(rowIDs(m.locks.byServer)(r), at)
	}
}

// trackOnScreen starts recording the locks on screen (the detail view's among them), from
// their census record now: a lock looked at has its recent past when its details open.
func (m *Model) trackOnScreen() {
	for _, id := range m.table.visible(m.view) {
		if id == "" || m.history.of(id) != nil {
			continue
		}
		m.startHistory(id, m.locks.get(id))
	}
}

// startHistory starts recording the untracked lock id, from its census record l now (nil:
// none).
func (m *Model) startHistory(id string, l *scanner.Lock) {
	m.history.track(id, m.now)
	if l != nil {
		m.recordLock(id, l)
	}
}

// recordSections records which demo workers are in a critical section on each lock, from the
// snapshots of the demo's run and of --compare's naive run (zero without one) taken at at
// (zero: now). A snapshot's message arrives a moment after it was taken: dated on arrival, a
// section would seem to go on past its release.
func (m *Model) recordSections(at time.Time, snaps ...demo.Snapshot) {
	if at.IsZero() {
		at = m.clock()
	}
	for _, s := range snaps {
		working := map[string][]sectionSight{}
		for _, w := range s.Workers {
			// Working, not Holding: a holder releasing is Holding while the next may already
			// hold the lock, which would read as an overlap that is not one.
			if w.State == demo.Working && w.Resource != "" {
				working[w.Resource] = append(working[w.Resource], sectionSight{w.Name, w.Holds, w.Mode})
			}
		}
		for _, key := range s.Resources {
			m.history.sections(key, at, working[key])
		}
	}
}

// demoMarks are the timeline marks of the demo's events.
var demoMarks = map[demo.Mark]markKind{demo.MarkCrash: markCrash, demo.MarkPause: markPause, demo.MarkStaleRefused: markStale}

// recordDemoMark records the mark of a demo event, if it has one.
func (m *Model) recordDemoMark(ev demo.Event) {
	if kind, ok := demoMarks[ev.Mark]; ok && ev.Resource != "" {
		m.history.mark(ev.Resource, ev.Worker, kind, ev.At)
	}
}
