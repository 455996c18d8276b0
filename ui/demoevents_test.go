package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/demo"
)

// The demo pane follows a failover-replica run's master through a failover, and the
// console's event log gets the demo's events once each, the switch among them.
func TestDemoPaneFollowsMasterSwitch(t *testing.T) {
	snap := demoTestSnapshot()
	snap.Scenario, snap.Phase, snap.Events = demo.FailoverReplica, demo.FailoverReplica, nil
	snap.Master = "127.0.0.1:7001"
	rec := &recordingDemo{snap: snap}
	m, _ := newTestModel(t, 140, 40, func(o *Options) { o.Demo = rec })
	m.events.open = true
	deliver := func(s demo.Snapshot) {
		rec.mu.Lock()
		rec.snap = s
		rec.mu.Unlock()
		m.Update(m.demo.snapshot(false, 0)())
	}
	deliver(snap)
	mustContain(t, screen(m), "master 127.0.0.1:7001")

	snap.FailingOver = "127.0.0.1:7001"
	at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	snap.Events = []demo.Event{{Seq: 1, At: at, Text: "failover: master 127.0.0.1:7001 killed (SIGKILL) with its replica behind"}}
	deliver(snap)
	mustContain(t, screen(m), "failing over: master 127.0.0.1:7001")

	snap.FailingOver, snap.Master, snap.PreviousMaster = "", "127.0.0.1:7002", "127.0.0.1:7001"
	snap.Counters.Promotions, snap.Counters.LocksLost, snap.Counters.OverlappingHolders, snap.Counters.TokenJumps = 1, 2, 1, 3
	switched := "failover: the workers now follow master 127.0.0.1:7002 (replica promoted; 127.0.0.1:7001 killed; 2 locks lost)"
	snap.Events = append(snap.Events, demo.Event{Seq: 2, At: at.Add(2 * time.Second), Text: switched})
	deliver(snap)
	deliver(snap) // the same events again: logged once
	s := screen(m)
	mustContain(t, s, "master 127.0.0.1:7002 (was 127.0.0.1:7001)")
	mustContain(t, s, "promotions 1  locks lost 2  overlapping holders 1  token jumps 3")
	mustContain(t, s, "demo         "+switched[:60])
	if n := strings.Count(s, "follow master"); n != 2 { // the log's line and the pane's last event
		t.Errorf("%d lines name the switch, want 2 (event log and pane)\n%s", n, s)
	}
	var demoLines int
	for _, en := range m.events.entries {
		if en.kind == kindDemo {
			demoLines++
		}
	}
	if demoLines != 2 {
		t.Errorf("%d demo lines in the event log, want 2", demoLines)
	}

	// A token after the promotion not above the last before makes the run unsafe: the pane
	// says why, not just "overlaps 0 UNSAFE".
	snap.Counters.TokenRegressions = 1
	deliver(snap)
	mustContain(t, screen(m), "token regressions 1")
}

// A demo event reaches the log with the next snapshot, after lines logged meanwhile: it goes
// in by its time.
func TestDemoEventsLoggedInOrder(t *testing.T) {
	var e eventLog
	at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	e.add(logEntry{at: at, kind: "acquired"})
	e.add(logEntry{at: at.Add(150 * time.Millisecond), kind: "waiting"})
	e.add(logEntry{at: at.Add(180 * time.Millisecond), kind: "renewed"})
	e.addInOrder(logEntry{at: at.Add(100 * time.Millisecond), kind: kindDemo})
	var kinds []string
	for _, en := range e.entries {
		kinds = append(kinds, en.kind)
	}
	if got := strings.Join(kinds, " "); got != "acquired demo waiting renewed" {
		t.Errorf("log order %q", got)
	}
}
