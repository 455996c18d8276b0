package ui

import "strconv"

// Fence-token jumps. locklib's token is the server's clock in microseconds, or its fence
// counter + 1 when the counter is ahead (protocol's nextToken). A master that takes over
// after a failover may not have the counter (replication is asynchronous), so the next
// token comes from its clock: a jump the console marks, because it is the moment fencing is
// what keeps a stale holder out. A token that goes down is never legitimate: it is marked
// whenever it is seen (on one server: failover.go leaves Redlock records out).

// jumpPasses is how many census passes after a master switch a changed token counts as a
// jump: the pass running at the switch (it may have read some keys before it) and the two
// after it. A lock re-taken on the new master shows within them.
const jumpPasses = 3

// tokenSeen is a lock's fence token in one record; ok is false when the record has none
// (another format, or the lock is gone).
type tokenSeen struct {
	v  int64
	ok bool
}

// fenceJump is why a lock's current token is marked.
type fenceJump struct {
	from, to int64
	down     bool   // lower than before: never legitimate
	failover string // "A → B": the master switch it followed; "" when none is in view
}

// text is the detail pane's explanation of the jump.
func (j fenceJump) text() string {
	tokens := strconv.FormatInt(j.from, 10) + " → " + strconv.FormatInt(j.to, 10)
	if j.down {
		return "fence token went DOWN " + tokens + ": never legitimate; a resource that checks tokens " +
			"refuses this holder's writes (the fence counter was lost and the server's clock is behind the old token)"
	}
	// A changed token proves the lock was taken again, not why: tokens are the server's clock
	// either way, so the text does not claim the new master's counter was behind.
	return "fence token jumped " + tokens + " after the failover (master " + j.failover + "): " +
		"taken again on the new master; a resource that checks tokens refuses the writes of a holder from before"
}

// logText is the event log's line about the jump.
func (j fenceJump) logText() string {
	text := "fence=" + strconv.FormatInt(j.from, 10) + " → " + strconv.FormatInt(j.to, 10)
	if j.down {
		return text + " went DOWN (never legitimate)"
	}
	return text + " after failover " + j.failover
}

// fenceJumps applies the rule. It is pure (no IO, no clock of its own); the model feeds it
// every record before the census takes it, the switches and the pass ends.
//
// Memory: outside a switch's window it keeps only the marks (one per lock whose current
// token jumped, dropped when the token moves on or the lock goes). Inside the window it
// remembers a lock's token at the switch only once that lock changes: what a lock had at the
// switch is its census row's token until then, so the map holds the locks that changed
// within the window's passes, not the census.
type fenceJumps struct {
	failover string               // the last switch, "A → B"
	until    uint64               // the window is open until this pass is complete
	atSwitch map[string]tokenSeen // lock id → its token at the switch; nil outside a window
	marks    map[string]fenceJump // lock id → the jump of its current token
}

// switched opens the window of a master switch from → to, seen while pass is the newest
// complete census pass.
func (f *fenceJumps) switched(from, to string, pass uint64) {
	f.failover = from + " → " + to
	f.until = pass + jumpPasses
	f.atSwitch = map[string]tokenSeen{}
}

// inWindow reports whether a switch's window is open.
func (f *fenceJumps) inWindow() bool { return f.atSwitch != nil }

// concerns reports whether a record taking a lock from prev to next matters to the rule:
// always inside a window, else only a token that went down. The caller skips building the
// lock's id otherwise.
func (f *fenceJumps) concerns(prev, next tokenSeen) bool {
	return f.inWindow() || prev.ok && next.ok && next.v < prev.v
}

// observe takes one record of lock id: its token was prev in the census and is next now
// (not ok: the lock is gone or has no token). It reports the jump when next is newly marked.
func (f *fenceJumps) observe(id string, prev, next tokenSeen) (fenceJump, bool) {
	base := prev
	if f.inWindow() {
		if seen, ok := f.atSwitch[id]; ok {
			base = seen
		} else {
			f.atSwitch[id] = prev // unchanged since the switch until now
		}
	}
	if !next.ok || !base.ok && !prev.ok {
		return fenceJump{}, false
	}
	down := prev.ok && next.v < prev.v || base.ok && next.v < base.v
	if !down && (!f.inWindow() || !base.ok || next.v == base.v) {
		return fenceJump{}, false
	}
	if have, ok := f.marks[id]; ok && have.to == next.v {
		return fenceJump{}, false // a re-read of a token already marked
	}
	from := base.v
	if !base.ok || down && prev.ok && next.v < prev.v {
		from = prev.v
	}
	j := fenceJump{from: from, to: next.v, down: down}
	if f.inWindow() {
		j.failover = f.failover
	}
	if f.marks == nil {
		f.marks = map[string]fenceJump{}
	}
	f.marks[id] = j
	return j, true
}

// passDone closes the window once its last pass is complete, and drops the marks of locks
// that are gone or whose token moved on (token: the lock's token now, ok false when gone).
func (f *fenceJumps) passDone(pass uint64, token func(id string) tokenSeen) {
	if f.inWindow() && pass >= f.until {
		f.atSwitch = nil
	}
	for id, j := range f.marks {
		if t := token(id); !t.ok || t.v != j.to {
			delete(f.marks, id)
		}
	}
}

// mark is the jump of lock id's current token (fence), if it is marked.
func (f *fenceJumps) mark(id string, fence tokenSeen) (fenceJump, bool) {
	j, ok := f.marks[id]
	if !ok || !fence.ok || fence.v != j.to {
		return fenceJump{}, false
	}
	return j, true
}
