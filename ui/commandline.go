package ui

import (
	"context"
	"errors"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// Commands of the `:` line.
const (
	commandContext = "context" // :context NAME: switch to a named connection
	commandPattern = "pattern" // :pattern GLOB: census under another pattern
)

var commandNames = []string{commandContext, commandPattern}

// commandLine is the `:` prompt, k9s's command mode: `:context NAME` switches the console
// to a named connection of the config file, `:pattern GLOB` re-scans the current one under
// another pattern. tab completes the command and the context names; enter runs it, esc
// leaves.
type commandLine struct {
	input    textinput.Model
	active   bool
	contexts []string
	hint     string // the candidates of the last ambiguous completion
}

func newCommandLine(st styles, contexts []string) commandLine {
	in := textinput.New()
	in.Prompt = ":"
	in.Placeholder = "context NAME, pattern GLOB (tab completes)"
	in.CharLimit = 512
	in.SetStyles(st.input)
	return commandLine{input: in, contexts: contexts}
}

func (c *commandLine) open() tea.Cmd {
	c.active, c.hint = true, ""
	c.input.SetValue("")
	return c.input.Focus()
}

func (c *commandLine) close() {
	c.active = false
	c.input.Blur()
}

// complete extends the word under completion (the command, or a context name after
// `context `) to the longest prefix its candidates share; several candidates are listed.
func (c *commandLine) complete() {
	text := c.input.Value()
	verb, arg, hasArg := strings.Cut(strings.TrimLeft(text, " "), " ")
	candidates, word, prefix := commandNames, verb, ""
	if hasArg {
		if verb != commandContext {
			return
		}
		candidates, word, prefix = c.contexts, strings.TrimLeft(arg, " "), commandContext+" "
	}
	var matched []string
	for _, cand := range candidates {
		if strings.HasPrefix(cand, word) {
			matched = append(matched, cand)
		}
	}
	c.hint = ""
	switch len(matched) {
	case 0:
		return
	case 1:
		c.input.SetValue(prefix + matched[0] + " ")
		if hasArg {
			c.input.SetValue(prefix + matched[0])
		}
	default:
		c.input.SetValue(prefix + commonPrefix(matched))
		c.hint = strings.Join(matched, " ")
	}
	c.input.CursorEnd()
}

func commonPrefix(words []string) string {
	p := words[0]
	for _, w := range words[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// parseCommand reads a command line: which context (or "" for the current) and pattern ("" for
// the context's) it asks for.
func parseCommand(line string, contexts []string) (contextName, pattern string, err error) {
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case commandContext, "ctx":
		if arg == "" {
			return "", "", errors.New("context: which? (" + strings.Join(contexts, ", ") + ")")
		}
		if !slices.Contains(contexts, arg) {
			known := "none in the config file"
			if len(contexts) > 0 {
				known = "known: " + strings.Join(contexts, ", ")
			}
			return "", "", errors.New("no context " + arg + " (" + known + ")")
		}
		return arg, "", nil
	case commandPattern:
		if arg == "" {
			return "", "", errors.New("pattern: which? (a glob, e.g. lock:order:*)")
		}
		return "", arg, nil
	}
	return "", "", errors.New("unknown command " + verb + " (context NAME, pattern GLOB)")
}

// view is the prompt line, with the candidates of an ambiguous completion after it.
func (c commandLine) view(width int, st styles) string {
	hint := ""
	if c.hint != "" {
		hint = "  " + st.dim.Render(present.SafeText(c.hint, 0))
	}
	c.input.SetWidth(max(width-2-len(c.hint)-2, 1))
	return fitLine(c.input.View()+hint, width)
}

// onCommandKey drives the command line; enter runs its command.
func (m *Model) onCommandKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.command.close()
		return nil
	case key.Matches(msg, m.keys.Complete):
		m.command.complete()
		return nil
	case key.Matches(msg, m.keys.Confirm):
		m.command.close()
		name, pattern, err := parseCommand(m.command.input.Value(), m.command.contexts)
		if err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		return m.requestSession(name, pattern)
	}
	var cmd tea.Cmd
	m.command.input, cmd = m.command.input.Update(msg)
	m.command.hint = ""
	return cmd
}

// requestSession asks for a session on context name ("" : the current) under pattern (""
// : the context's), in a command; the newest request wins.
func (m *Model) requestSession(name, pattern string) tea.Cmd {
	m.sessionSeq++
	what := "context " + name
	if name == "" {
		what = "pattern " + pattern
	}
	m.setNotice("switching to "+what+"…", false)
	return openSessionCmd(m.ctx, m.switchTo, name, pattern, m.sessionSeq, m.noEvents)
}

// sessionMsg is a session opened for request seq, its streams already running under end.
type sessionMsg struct {
	seq     uint64
	session Session
	err     error
	scanCh  <-chan scanner.Update
	eventCh <-chan protocol.Event
	// masterCh is a Sentinel target's master switches (nil for another target).
	masterCh <-chan connect.MasterSwitch
	focus    func(keys []string)
	end      context.CancelFunc
}

// openSessionCmd opens the session asked for and starts its streams (the census and the
// event subscription) under a context of their own, which the model ends when it switches
// away.
func openSessionCmd(ctx context.Context, open SwitchFunc, name, pattern string, seq uint64, noEvents bool) tea.Cmd {
	return func() tea.Msg {
		s, err := open(ctx, name, pattern)
		if err != nil {
			return sessionMsg{seq: seq, err: err}
		}
		sctx, end := context.WithCancel(ctx)
		f := s.Scanner.Follow(sctx)
		var events <-chan protocol.Event
		if !noEvents {
			events = subscribeEvents(sctx, s.Target.Clients)
		}
		var switches <-chan connect.MasterSwitch
		if s.Target.Mode == connect.Sentinel {
			switches = s.Target.FollowMaster(sctx)
		}
		return sessionMsg{seq: seq, session: s, scanCh: f.Updates(), eventCh: events, masterCh: switches, focus: f.Focus, end: end}
	}
}

// onSession shows the session asked for last: the old one's streams end and its connection
// is closed (in a command), and the console starts over on the new census. A late answer to
// an older request is closed unseen.
func (m *Model) onSession(msg sessionMsg) tea.Cmd {
	if msg.seq != m.sessionSeq {
		if msg.err == nil {
			msg.end()
			return closeCmd(msg.session.Close)
		}
		return nil
	}
	if msg.err != nil {
		m.setNotice("switch failed: "+msg.err.Error(), true) // connect's errors carry no password
		return nil
	}
	if m.endSession != nil {
		m.endSession()
	}
	closeOld := closeCmd(m.closeSession)
	s := msg.session
	m.session, m.endSession, m.closeSession = msg.seq, msg.end, s.Close
	m.scanCh, m.eventCh, m.masterCh, m.focus, m.focused = msg.scanCh, msg.eventCh, msg.masterCh, msg.focus, nil
	m.admin, m.redact = s.Admin, s.Target.Redact
	m.readOnly = s.ReadOnly || s.Admin == nil || s.Admin.ReadOnly()
	m.keys = newKeyMap(m.readOnly)
	m.keys.Audit.SetEnabled(s.Admin != nil)
	m.status = newStatusBar(s.Target, s.Label, m.readOnly)
	m.locks, m.waiters, m.passGen = newLockSet(s.Target.Mode == connect.Independent), map[string]int{}, 0
	m.watchContention()
	m.fence, m.jumpLines, m.jumpsUnlogged = fenceJumps{}, 0, 0
	m.detail.open, m.audit.open, m.dialog = false, false, nil
	m.events.add(logEntry{at: m.clock(), kind: kindAction, text: "switched to " + s.Label})
	m.setNotice("switched to "+s.Label, false)
	return tea.Batch(closeOld, m.setQuery(m.query, true), waitForScan(m.scanCh, m.session), waitForEvent(m.eventCh, m.session),
		waitForSwitch(m.masterCh, m.session), masterCmd(m.ctx, s.Target, m.session))
}

// closeCmd runs close (a connection's Close) off the update loop; nil when there is none.
func closeCmd(close func()) tea.Cmd {
	if close == nil {
		return nil
	}
	return func() tea.Msg { close(); return nil }
}
