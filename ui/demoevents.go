package ui

import (
	"fmt"

	"github.com/lockscope/lockscope/demo"
)

// kindDemo is an event of the demo's run in the event log: a fault, a refused write, a
// failover ("demo failover: the workers now follow master …"), as the demo words it.
const kindDemo = "demo"

// logDemoEvents adds the demo events of a snapshot that the log has not seen yet (after
// *logged, which it advances), each text after prefix. A snapshot carries only the latest
// few; the pane refreshes often enough to see them all. They arrive up to a refresh late, so
// each goes in by its time among the lines logged meanwhile.
func (m *Model) logDemoEvents(events []demo.Event, logged *uint64, prefix string) {
	for _, ev := range events {
		if ev.Seq <= *logged {
			continue
		}
		m.events.addInOrder(logEntry{at: ev.At, kind: kindDemo, text: prefix + ev.Text})
		m.recordDemoMark(ev)
		*logged = ev.Seq
	}
}

// masterParts show the master a failover-replica run's workers follow: being failed over,
// then the new one with the one it replaced, and the promotions' figures.
func masterParts(s demo.Snapshot, st styles) []string {
	switch {
	case s.FailingOver != "":
		return []string{st.warning.Render("failing over: master " + s.FailingOver)}
	case s.Master == "":
		return nil
	case s.PreviousMaster == "":
		return []string{"master " + s.Master}
	}
	k := s.Counters
	return []string{
		st.warning.Render("master " + s.Master + " (was " + s.PreviousMaster + ")"),
		fmt.Sprintf("promotions %d  locks lost %d  overlapping holders %d  token jumps %d", k.Promotions, k.LocksLost, k.OverlappingHolders, k.TokenJumps),
	}
}

// addInOrder adds en after the entries not later than it.
func (e *eventLog) addInOrder(en logEntry) {
	e.add(en)
	for i := len(e.entries) - 1; i > 0 && e.entries[i-1].at.After(en.at); i-- {
		e.entries[i-1], e.entries[i] = e.entries[i], e.entries[i-1]
	}
}
