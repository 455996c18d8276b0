package ui

import (
	"cmp"
	"strconv"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
)

// The model's side of a failover: the master switches it hears of, and the fence-token jump
// rule (fencejump.go) fed with every record before the census takes it.

// token is a row's fence token (none for a nil row).
func (r *lockRow) token() tokenSeen {
	if r == nil || r.flags&rowHasFence == 0 {
		return tokenSeen{}
	}
	return tokenSeen{v: r.fence, ok: true}
}

// recordToken is a record's fence token (none when it is gone).
func recordToken(l *scanner.Lock) tokenSeen {
	if l.Gone || !l.HasFence {
		return tokenSeen{}
	}
	return tokenSeen{v: l.Fence, ok: true}
}

// observeTokens runs the jump rule over a batch before the census applies it: each record
// against its lock's row, logging the jumps it marks.
func (m *Model) observeTokens(batch []scanner.Lock) {
	for i := range batch {
		l := &batch[i]
		if l.Quorum != nil {
			// A Redlock record's token is the highest of the instances that hold the key and
			// answered, each from its own clock: an instance down, or the next holder's
			// instances, lower it with no token going down.
			continue
		}
		var prev tokenSeen
		if at, ok := m.locks.find(l.Addr, l.Key); ok {
			prev = m.locks.rows[at].token()
		}
		next := recordToken(l)
		if !m.fence.concerns(prev, next) {
			continue
		}
		j, ok := m.fence.observe(m.locks.id(l), prev, next)
		switch {
		case !ok:
		case m.jumpLines < jumpLinesPerPass:
			m.jumpLines++
			m.events.add(logEntry{at: m.clock(), kind: kindFenceJump, key: l.Key, text: j.logText()})
		default:
			m.jumpsUnlogged++
		}
	}
}

// jumpLinesPerPass bounds the fence-jump lines a census pass writes to the event log: after a
// failover of a large deployment every lock re-taken jumps, and its lines would push the
// failover line out. The ⇡ marks them all; the pass's end counts the rest in one line.
const jumpLinesPerPass = 20

// jumpPassDone ends a pass for the fence-jump lines: the jumps past the bound are counted.
func (m *Model) jumpPassDone() {
	if m.jumpsUnlogged > 0 {
		m.events.add(logEntry{at: m.clock(), kind: kindFenceJump,
			text: strconv.Itoa(m.jumpsUnlogged) + " more fence tokens jumped (⇡ in FENCE)"})
	}
	m.jumpLines, m.jumpsUnlogged = 0, 0
}

// prunedRow tells the jump rule of a lock a complete pass no longer saw, while a switch's
// window needs its token at the switch.
func (m *Model) prunedRow(r *lockRow) {
	if !m.fence.inWindow() {
		return
	}
	id := rowIDs(m.locks.byServer)(r)
	m.fence.observe(id, r.token(), tokenSeen{})
}

// tokenOf is lock id's fence token in the census now.
func (m *Model) tokenOf(id string) tokenSeen {
	if at, ok := m.locks.find(m.locks.split(id)); ok {
		return m.locks.rows[at].token()
	}
	return tokenSeen{}
}

// jumpOf is the mark of l's current token, if it jumped.
func (m *Model) jumpOf(l *scanner.Lock) (fenceJump, bool) {
	if len(m.fence.marks) == 0 {
		return fenceJump{}, false
	}
	return m.fence.mark(m.locks.id(l), recordToken(l))
}

// onMaster shows the master the sentinels named when the session started, unless a switch
// came first.
func (m *Model) onMaster(msg masterMsg) {
	switch {
	case msg.err != nil:
		m.warn("sentinels: " + m.redact(msg.err.Error()))
	case m.status.master == "":
		m.status.master = msg.addr
	}
}

// onMasterSwitch records a failover the sentinels announced: the status bar follows the new
// master, the event log says so, and the jump rule opens its window. The census is kept: the
// scanner's client follows the master by itself.
func (m *Model) onMasterSwitch(sw connect.MasterSwitch) {
	from := cmp.Or(sw.From, cmp.Or(m.status.master, "?"))
	m.status.master = sw.To
	if sw.Name != "" {
		m.status.masterName = sw.Name
	}
	m.fence.switched(from, sw.To, m.passGen)
	m.events.add(logEntry{at: cmp.Or(sw.At, m.clock()), kind: kindFailover, text: "master " + from + " → " + sw.To})
}

// jumped reports whether l's current token is marked (the table's ⇡).
func (m *Model) jumped(l *scanner.Lock) bool {
	_, ok := m.jumpOf(l)
	return ok
}
