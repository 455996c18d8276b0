package ui

import (
	"context"
	"errors"
	"testing"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
)

// TestCommandLineCompletesAndParses: tab completes the command and the context names (a
// shared prefix first, with the candidates listed), and enter's line is read.
func TestCommandLineCompletesAndParses(t *testing.T) {
	c := newCommandLine(monoStyles(), []string{"prod-eu", "prod-us", "staging"})
	c.open()
	c.input.SetValue("con")
	c.complete()
	if got := c.input.Value(); got != "context " {
		t.Fatalf("command completion: %q", got)
	}
	c.input.SetValue("context pr")
	c.complete()
	if got := c.input.Value(); got != "context prod-" || c.hint != "prod-eu prod-us" {
		t.Fatalf("ambiguous completion: %q, hint %q", got, c.hint)
	}
	c.input.SetValue("context st")
	c.complete()
	if got := c.input.Value(); got != "context staging" {
		t.Fatalf("context completion: %q", got)
	}
	for line, want := range map[string][2]string{"context staging": {"staging", ""}, "pattern lock:order:*": {"", "lock:order:*"}} {
		name, pattern, err := parseCommand(line, c.contexts)
		if err != nil || name != want[0] || pattern != want[1] {
			t.Errorf("%q: %q %q %v", line, name, pattern, err)
		}
	}
	for _, bad := range []string{"context nope", "context", "pattern", "quit"} {
		if _, _, err := parseCommand(bad, c.contexts); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSessionSwitchDropsTheOldCensus: the answer to the newest `:` request replaces the
// census and the target; messages of the old session's streams and answers to older
// requests are dropped, and an older session that opened late is closed.
func TestSessionSwitchDropsTheOldCensus(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	m.switchTo = func(context.Context, string, string) (Session, error) { return Session{}, errors.New("unused") }
	m.keys.Command.SetEnabled(true)
	typeKeys(m, ":")
	typeKeys(m, "context staging")
	m.command.contexts = []string{"staging"}
	typeKeys(m, "enter")
	if m.sessionSeq != 1 {
		t.Fatalf("enter did not ask for a session (seq %d)", m.sessionSeq)
	}
	lateClosed := false
	m.sessionSeq = 2 // a second request went out after the first
	_, closeLate := m.Update(sessionMsg{seq: 1, end: func() {}, session: Session{Close: func() { lateClosed = true }}})
	if m.session != 0 || closeLate == nil {
		t.Fatal("an older request's session was shown, or not closed")
	}
	closeLate()
	if !lateClosed {
		t.Fatal("the late session's connection was not closed")
	}
	target := connect.Target{Mode: connect.Standalone, Addrs: []string{"10.9.9.9:6379"}}
	scans := make(chan scanner.Update)
	m.Update(sessionMsg{seq: 2, session: Session{Target: target, Label: "context staging, lock:*"},
		scanCh: scans, end: func() {}})
	s := screen(m)
	mustContain(t, s, "10.9.9.9:6379")
	mustContain(t, s, "context staging, lock:*")
	mustNotContain(t, s, "lock:order:1001")
	// A batch of the old session's stream is dropped.
	m.Update(scanMsg{update: scanner.Update{Kind: scanner.UpdateBatch, Gen: 9, Locks: fixture()}, session: 0})
	mustNotContain(t, screen(m), "lock:order:1001")
}
