package ui

import (
	"fmt"

	"github.com/lockscope/lockscope/demo"
)

// kindDemo is an event of the demo's run in the event log: a fault, a refused write, a
// failover ("demo failover: the workers now follow master …"), as the demo words it.
const kindDemo = "demo"

// logDemoEvents adds the demo events of a snapshot that the log has not seen yet. A snapshot
// carries only the latest few; the pane refreshes often enough to see them all.
func (m *Model) logDemoEvents(events []demo.Event) {
	for _, ev := range events {
		if ev.Seq <= m.demo.loggedSeq {
			continue
		}
		m.events.add(logEntry{at: ev.At, kind: kindDemo, text: ev.Text})
		m.demo.loggedSeq = ev.Seq
	}
}

// masterParts show the master a failover-replica run's workers follow: being failed over,
// then the new one with the one it replaced, and the promotions' figures.
func (p demoPane) masterParts(st styles) []string {
	s := p.snap
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
