// Package ui is lockscope's terminal console: a live lock inspector and admin console in
// Bubble Tea v2. One root model (model.go) owns the state; the components (table, detail pane,
// status bar, filter, dialogs, event log, audit view, help) are plain structs with methods in
// their own files; every piece of IO runs in a command (commands.go).
package ui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// Watcher is the census stream the console shows: *scanner.Scanner. The console tells the
// Follower which keys are on screen, so they are re-read more often than the rest.
type Watcher interface {
	Follow(ctx context.Context) *scanner.Follower
}

// Options configure the console.
type Options struct {
	// Target is the deployment inspected: shown in the status bar, and its clients carry the
	// locklib event subscription.
	Target connect.Target
	// Scanner delivers the census (required).
	Scanner Watcher
	// Admin runs force-release, extend and the audit trail. Nil disables all three.
	Admin *actions.Admin
	// ReadOnly hides the mutating actions and shows a badge (the Admin refuses them as well).
	ReadOnly bool
	// StuckAfter flags locks held longer than this; 0 means 5 minutes.
	StuckAfter time.Duration
	// TargetLabel adds words about the target to the status bar (the demo names its server).
	TargetLabel string
	// Demo, when set, adds the contention demo's pane below the table (workers, checker
	// counters) and its keys: [ ] select a worker, p pause/resume, x crash, + add.
	Demo DemoController
	// DemoCompare, with Demo, is the naive lock's run of `demo --compare`: the pane shows the
	// two runs side by side (Demo's left, this one right) and its keys act on both.
	DemoCompare DemoController
	// Group is the rule that puts lock keys in groups for the contention overview (the
	// exporter's --group); nil means keygroup.Default.
	Group *keygroup.Rule
	// NoEvents turns off the subscription to locklib's event channel.
	NoEvents bool
	// Now is the clock (tests freeze it); nil means time.Now.
	Now func() time.Time
	// Contexts are the named connections `:context` completes and accepts.
	Contexts []string
	// Switch opens the sessions of `:context NAME` (pattern "") and `:pattern GLOB` (name ""):
	// connecting is the caller's (package connect's) business. Nil disables the `:` line.
	Switch SwitchFunc
}

// SwitchFunc opens a session on the named connection ("" : the current one) under pattern
// ("" : the connection's own). It runs in a command, off the update loop.
type SwitchFunc func(ctx context.Context, name, pattern string) (Session, error)

// Session is a connection and its census, as `:context` and `:pattern` switch to them.
type Session struct {
	Target   connect.Target
	Scanner  Watcher
	Admin    *actions.Admin // nil disables the actions and the audit trail
	ReadOnly bool
	// Label names it in the status bar and the event log ("context prod, lock:*").
	Label string
	// Close releases its connection; the console calls it when it switches away or ends.
	Close func()
}

// Run opens the console on the terminal and returns when the user quits or ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Scanner == nil {
		return errors.New("ui: Options.Scanner is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	sctx, endFirst := context.WithCancel(ctx)
	follower := o.Scanner.Follow(sctx)
	var events <-chan protocol.Event
	if !o.NoEvents {
		events = subscribeEvents(sctx, o.Target.Clients)
	}
	m := newModel(ctx, o, follower.Updates(), events)
	m.focus, m.endSession = follower.Focus, endFirst
	if o.Target.Mode == connect.Sentinel {
		m.masterCh = o.Target.FollowMaster(sctx)
	}
	defer func() { // the caller closes o.Target; the console, what it switched to
		if m.closeSession != nil {
			m.endSession()
			m.closeSession()
		}
	}()
	// lipgloss detected the terminal's colours for stdout when it loaded; Bubble Tea would
	// detect them again, which inside tmux runs `tmux info` once more before the first frame.
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithColorProfile(lipgloss.Writer.Profile)).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the caller cancelled: a normal end
	}
	return err
}
