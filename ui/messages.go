package ui

import (
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// Messages the commands send back to the root model. Every asynchronous result carries the id
// or generation it was started for, so a result that arrives after the state moved on is
// recognised and dropped instead of overwriting newer state.

// scanMsg is one message of the scanner's Watch stream of session (`:context` and
// `:pattern` start new sessions: the messages of older ones are dropped).
type scanMsg struct {
	update  scanner.Update
	session uint64
}

// masterMsg is the master a Sentinel target's sentinels name when session starts (err: none
// answered).
type masterMsg struct {
	addr    string
	err     error
	session uint64
}

// masterSwitchMsg is one failover the sentinels of session announced (+switch-master).
type masterSwitchMsg struct {
	sw      connect.MasterSwitch
	session uint64
}

// masterClosedMsg says the sentinels' stream of switches ended (its session ended).
type masterClosedMsg struct{}

// scanClosedMsg says the Watch stream ended (the program is shutting down).
type scanClosedMsg struct{}

// eventMsg is one locklib lifecycle event from the events channel of session.
type eventMsg struct {
	event   protocol.Event
	session uint64
}

// eventsClosedMsg says the event subscription ended.
type eventsClosedMsg struct{}

// tickMsg advances the live TTL countdown.
type tickMsg time.Time

// viewBuiltMsg is a filtered, sorted view index built off the update loop for query
// generation gen. selIndex is where selKey landed in it (-1: not there).
type viewBuiltMsg struct {
	gen      uint64
	index    viewIndex
	selKey   string
	selIndex int
}

// viewPartialMsg is the first rows of the view for query generation gen (viewIndex.unranked
// counts the rest), sent before the full build.
type viewPartialMsg struct {
	gen   uint64
	index viewIndex
}

// rebuildMsg says a spaced rebuild of the view index is due.
type rebuildMsg struct{}

// actionDoneMsg is the result of a force-release or an extend.
type actionDoneMsg struct {
	id     uint64
	action actions.Action
	key    string
	holder string        // ActionReleaseHolder: the holder's ID
	seen   *scanner.Lock // the record the operator confirmed against
	result actions.Result
	err    error
}

// declineRecordedMsg says whether the audit record of a dialog answered No was written.
type declineRecordedMsg struct {
	key string
	err error
}

// auditLoadedMsg is a page of the audit trail, for load id.
type auditLoadedMsg struct {
	id      uint64
	records []actions.AuditRecord
	err     error
}
