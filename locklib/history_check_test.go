package locklib

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockscope/lockscope/internal/redistest"

	"github.com/lockscope/lockscope/locklib/protocol"
)

const (
	// historyLeakBound is how long a value may stay after its operation ended: a failed
	// Obtain or a Release cleans up within 2 s when the server answers.
	historyLeakBound = 2500 * time.Millisecond
	// historyExpiryMargin is taken off every deadline: Redis counts an expiry from its
	// millisecond clock, which may read up to 1 ms before the request arrived, while a
	// Lock counts from the request's send time.
	historyExpiryMargin = 5 * time.Millisecond
	// historyReleaseBound is Release's documented bound (its own 2 s timeout), to which
	// waiting for a watchdog renewal in flight (timeout ttl/3) adds.
	historyReleaseBound = 2 * time.Second
	// historyRoundSpread is how far apart (on the servers' clock, which is this machine's)
	// the reads of a sample round may be for the validity check to count the round as one
	// instant. A Redlock Lock holds a majority at every instant of its validity, but not
	// always the same one: a renewal confirmed by other instances than the acquisition moves
	// the deadline, an instance it left out keeps the key only until the ttl it had, and one
	// that missed the acquisition may get the key late. Each majority's keys outlive the
	// deadline that the next one replaced by the drift (at least 2 ms, redlock.go) less the
	// 1 ms by which Redis's millisecond clock may start a ttl early; two reads closer than
	// that find one majority's instances.
	historyRoundSpread  = time.Millisecond
	historyCheckTimeout = 5 * time.Minute
	historyMaxReports   = 8 // per check; the count of the rest is given
)

// closeAt is the end of a released Lock's validity: when its holder stopped relying on it.
func (o *historyOp) closeAt() time.Duration {
	c := min(o.releaseAt, o.deadline-historyExpiryMargin)
	if o.lost {
		c = min(c, o.lostAt)
	}
	return c
}

// end is when the operation stopped being entitled to its value in the key: its failure,
// or the Release of its Lock.
func (o *historyOp) end() time.Duration {
	if o.err != nil {
		return o.ret
	}
	return o.releaseAt
}

// releaseFailed tells whether the Lock's Release failed on backend errors: its value may
// then stay until the key runs out by itself (docs/locklib.md), past the leak bound.
func (o *historyOp) releaseFailed() bool { return o.err == nil && errors.Is(o.releaseErr, ErrBackend) }

func (o *historyOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", o.trace(), o.owner)
	if o.try {
		b.WriteString("TryObtain")
	} else {
		b.WriteString("Obtain")
	}
	if o.keys != nil {
		fmt.Fprintf(&b, "Multi %v", o.keys)
	}
	if o.reentrant {
		fmt.Fprintf(&b, " re-entrant level %d", o.level)
	}
	fmt.Fprintf(&b, " ttl %v", ms(o.ttl))
	if o.watchdog {
		b.WriteString(" watchdog")
	}
	fmt.Fprintf(&b, " ctx %v", ms(o.timeout))
	if o.cancelAt > 0 {
		fmt.Fprintf(&b, " (cancel at +%v)", ms(o.cancelAt))
	}
	fmt.Fprintf(&b, " [%v..%v]", ms(o.invoke), ms(o.ret))
	if o.err != nil {
		fmt.Fprintf(&b, " failed: %v", o.err)
		return b.String()
	}
	fmt.Fprintf(&b, " token %d value %s; deadline %v", o.token, o.value, ms(o.deadline))
	if o.lost {
		fmt.Fprintf(&b, ", Lost() at %v", ms(o.lostAt))
	}
	fmt.Fprintf(&b, ", Release at %v took %v: %s; valid until %v", ms(o.releaseAt), ms(o.releaseDur), errText(o.releaseErr), ms(o.closeAt()))
	for _, r := range o.refreshes {
		fmt.Fprintf(&b, "\n\t\t%v", r)
	}
	return b.String()
}

// historyIndex looks operations up by the trace in a value and by owner and key.
type historyIndex struct {
	byTrace    map[string]*historyOp
	byOwnerKey map[string][]*historyOp // sorted by invoke
}

func (h *history) index() historyIndex {
	x := historyIndex{byTrace: map[string]*historyOp{}, byOwnerKey: map[string][]*historyOp{}}
	for _, o := range h.ops {
		x.byTrace[o.trace()] = o
		for _, key := range o.lockedKeys() {
			k := o.owner + "\x00" + key
			x.byOwnerKey[k] = append(x.byOwnerKey[k], o)
		}
	}
	for _, ops := range x.byOwnerKey {
		slices.SortFunc(ops, func(a, b *historyOp) int { return cmp.Compare(a.invoke, b.invoke) })
	}
	return x
}

// writer is the operation whose trace a stored value carries (for a re-entrant lock, the
// level that created the key), nil for "" or a value no operation wrote.
func (x historyIndex) writer(value string) *historyOp {
	v, err := protocol.ParseValue(value)
	if err != nil {
		return nil
	}
	return x.byTrace[v.Trace]
}

func (h *history) check(t *testing.T, seed uint64, stats redistest.FaultStats) {
	t.Helper()
	x := h.index()
	lin := h.checkLinearizable(seed)
	porcupineCheck := "porcupine (one holder whose validity is open)"
	if h.fenced {
		porcupineCheck = "porcupine (one holder whose validity is open, fencing order)"
	}
	checks := []struct {
		name       string
		violations []string
	}{
		{porcupineCheck, lin.violations},
		{"validity against the key's content", h.checkValidity(x)},
		{"leaks", h.checkLeaks(x)},
		{"Release time bound", h.checkReleaseBound()},
		{"results", h.checkResults()},
	}
	found := 0
	var all strings.Builder
	for _, c := range checks {
		found += len(c.violations)
		for i, v := range c.violations {
			fmt.Fprintf(&all, "%s: %s\n\n", c.name, v)
			if i < historyMaxReports {
				t.Errorf("%s: %s", c.name, v)
			} else if i == historyMaxReports {
				t.Errorf("%s: %d more violations", c.name, len(c.violations)-i)
			}
		}
	}
	h.logSummary(t, stats, lin)
	if found > 0 {
		t.Errorf("seed %d: %d violations (all of them: %s); LOCKLIB_HISTORY_SEED=%d repeats the random choices",
			seed, found, writeTemp("locklib-history-*.txt", all.String()), seed)
	}
}

// writeTemp writes text to a new temporary file, kept for the reader, and returns its name.
func writeTemp(pattern, text string) string {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		return err.Error()
	}
	return f.Name()
}

func (h *history) logSummary(t *testing.T, stats redistest.FaultStats, lin linearizability) {
	t.Helper()
	var ok, tryOK, try, ctx, backend, nested, multi, refreshes int
	for _, o := range h.ops {
		if o.keys != nil && o.err == nil {
			multi++
		}
		switch {
		case o.err == nil:
			ok++
			if o.try {
				tryOK++
			}
		case errors.Is(o.err, ErrBackend):
			backend++
		case o.try && errors.Is(o.err, ErrNotObtained):
			try++
		default:
			ctx++
		}
		if o.level > 1 && o.err == nil {
			nested++
		}
		refreshes += len(o.refreshes)
	}
	var stalls, restarts int
	var stalled time.Duration
	var windows []string
	for _, f := range h.faults {
		if f.restart {
			restarts++
		} else {
			stalls++
			stalled += f.end - f.start
		}
		windows = append(windows, f.String())
	}
	rounds, instant, n := 0, 0, 0
	for _, rs := range h.samples {
		rounds += len(rs)
		for _, r := range rs {
			n += len(r)
			if r.spread() <= historyRoundSpread {
				instant++
			}
		}
	}
	t.Logf("%d Obtain/TryObtain: %d held (%d nested re-entries, %d multi-key, %d by TryObtain), %d TryObtain not obtained, %d context ended, %d backend errors; %d Refresh calls",
		len(h.ops), ok, nested, multi, tryOK, try, ctx, backend, refreshes)
	t.Logf("server faults: %d stalls (%v in all), %d restarts; connection faults: %d lost replies, %d lost requests, %d held replies",
		stalls, ms(stalled), restarts, stats.LostReplies, stats.LostRequests, stats.HeldReplies)
	t.Logf("server faults: %s", strings.Join(windows, ", "))
	if h.instances > 1 {
		t.Logf("%d sample rounds of the %d instances (%d reads, %d rounds read within %v: the validity check's); porcupine checked %d operations on %d keys in %v",
			rounds, h.instances, n, instant, historyRoundSpread, lin.ops, len(h.samples), lin.took.Round(time.Microsecond))
	} else {
		t.Logf("%d samples; porcupine checked %d operations on %d keys in %v", n, lin.ops, len(h.samples), lin.took.Round(time.Microsecond))
	}
	for _, u := range lin.unknown {
		t.Logf("porcupine gave no verdict (timeout) for %s: the mutual exclusion check did not run there", u)
	}
}

// ---- Mutual exclusion and fencing order (porcupine) ----

// lockInput is an Acquire (an Obtain that returned a Lock; its output is the token, 0
// without fencing) or a Close (the end of that Lock's validity, a point in time).
type lockInput struct {
	close     bool
	id        int
	owner     string
	reentrant bool
}

// lockState is the key's holder: owner, token and open levels (ids, sorted, ","-joined;
// "" when free). When free, owner and token are the last holder's.
type lockState struct {
	owner  string
	token  int64
	levels string
}

// lockModel: at most one owner whose validity is open. A fresh acquisition needs the key
// free and, when fenced, a token above every earlier one; a re-entrant one by the holder
// keeps the token. An owner may also re-enter with its own token right after its levels
// closed: the key outlives a deadline by a little, and the same owner holding on is no
// second holder. Without fencing (Redlock) every token is 0 and only the holder counts.
func lockModel(fenced bool) porcupine.Model {
	token := func(t any) string {
		if !fenced {
			return ""
		}
		return fmt.Sprintf(" token %d", t)
	}
	return porcupine.Model{
		Init: func() any { return lockState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(lockState), input.(lockInput)
			if in.close {
				levels, ok := removeLevel(s.levels, in.id)
				return ok, lockState{owner: s.owner, token: s.token, levels: levels}
			}
			token := output.(int64)
			sameOwner := in.reentrant && in.owner == s.owner && token == s.token
			if !sameOwner && (s.levels != "" || fenced && token <= s.token) {
				return false, s
			}
			return true, lockState{owner: in.owner, token: token, levels: addLevel(s.levels, in.id)}
		},
		DescribeOperation: func(input, output any) string {
			in := input.(lockInput)
			if in.close {
				return fmt.Sprintf("close h%d", in.id)
			}
			return fmt.Sprintf("h%d %s%s", in.id, in.owner, token(output))
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			if s.levels == "" {
				return fmt.Sprintf("free (last: %s%s)", s.owner, token(s.token))
			}
			return fmt.Sprintf("%s%s levels h%s", s.owner, token(s.token), strings.ReplaceAll(s.levels, ",", " h"))
		},
	}
}

func addLevel(levels string, id int) string {
	ids := parseLevels(levels)
	ids = append(ids, id)
	slices.Sort(ids)
	return joinLevels(ids)
}

func removeLevel(levels string, id int) (string, bool) {
	ids := parseLevels(levels)
	i := slices.Index(ids, id)
	if i < 0 {
		return levels, false
	}
	return joinLevels(slices.Delete(ids, i, i+1)), true
}

func parseLevels(levels string) []int {
	if levels == "" {
		return nil
	}
	var ids []int
	for _, f := range strings.Split(levels, ",") {
		n, _ := strconv.Atoi(f)
		ids = append(ids, n)
	}
	return ids
}

func joinLevels(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// checkLinearizable checks each key's history on its own. Failed Obtains change nothing
// and are left out (the leak check covers them), and so are Locks whose validity ended
// before Obtain returned them: their holder never relied on them, and the server may have
// run their acquisition after that end (the deadline counts from the attempt's send time).
func (h *history) checkLinearizable(seed uint64) linearizability {
	var lin linearizability
	for _, key := range h.keys() {
		var ops []porcupine.Operation
		for _, o := range h.ops {
			if !o.holds(key) || o.err != nil || o.closeAt() <= o.ret {
				continue
			}
			in := lockInput{id: o.id, owner: o.owner, reentrant: o.reentrant}
			ops = append(ops,
				porcupine.Operation{ClientId: o.worker, Input: in, Output: o.token,
					Call: int64(o.invoke), Return: int64(o.ret), Metadata: o.String()},
				porcupine.Operation{ClientId: o.worker, Input: lockInput{close: true, id: o.id},
					Call: int64(o.closeAt()), Return: int64(o.closeAt()) + 1,
					Metadata: fmt.Sprintf("%s's validity ends at %v", o.trace(), ms(o.closeAt()))})
		}
		start := time.Now()
		res, info := porcupine.CheckOperationsVerbose(lockModel(h.fenced), ops, historyCheckTimeout)
		lin.took += time.Since(start)
		lin.ops += len(ops)
		switch res {
		case porcupine.Unknown:
			lin.unknown = append(lin.unknown, key)
		case porcupine.Illegal:
			lin.violations = append(lin.violations, h.linearizabilityReport(seed, key, ops, info))
		}
	}
	return lin
}

// linearizability is what checkLinearizable found, and what the search cost.
type linearizability struct {
	violations []string
	unknown    []string // keys without a verdict in historyCheckTimeout
	ops        int
	took       time.Duration
}

func (h *history) linearizabilityReport(seed uint64, key string, ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var faults []porcupine.Annotation
	for _, f := range h.faults {
		faults = append(faults, porcupine.Annotation{Tag: "server", Start: int64(f.start), End: int64(f.end), Description: f.String()})
	}
	info.AddAnnotations(faults)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no linearization (seed %d); ", key, seed)
	if f, err := os.CreateTemp("", "locklib-history-*.html"); err != nil {
		fmt.Fprintf(&b, "no visualization: %v", err)
	} else {
		f.Close()
		if err := porcupine.VisualizePath(lockModel(h.fenced), info, f.Name()); err != nil {
			fmt.Fprintf(&b, "no visualization: %v", err)
		} else {
			fmt.Fprintf(&b, "visualization: %s", f.Name())
		}
	}
	b.WriteString(stuckAt(lockModel(h.fenced), info, ops))
	for _, w := range h.witnesses(key) {
		b.WriteString("\n\t" + w)
	}
	return b.String()
}

// stuckAt shows where the longest linearization porcupine found ends: its last steps and
// the operations it could not place, those that had to come first listed first.
func stuckAt(model porcupine.Model, info porcupine.LinearizationInfo, ops []porcupine.Operation) string {
	var longest []porcupine.Operation
	for _, partition := range info.PartialLinearizationsOperations() {
		for _, lin := range partition {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	var b strings.Builder
	placed := map[lockInput]bool{}
	state := model.Init()
	for i, op := range longest {
		placed[op.Input.(lockInput)] = true
		_, state = model.Step(state, op.Input, op.Output)
		if i >= len(longest)-3 {
			fmt.Fprintf(&b, "\n\tlinearized: %v\n\t\t=> %s", op.Metadata, model.DescribeState(state))
		}
	}
	var rest []porcupine.Operation
	for _, op := range ops {
		if !placed[op.Input.(lockInput)] {
			rest = append(rest, op)
		}
	}
	slices.SortFunc(rest, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
	for _, op := range rest[:min(len(rest), 3)] {
		fmt.Fprintf(&b, "\n\tnot placed: %v", op.Metadata)
	}
	return b.String()
}

// witnesses are plain reasons the history of key has no linearization, for the report:
// two owners whose validity overlaps, and (when fenced) a fresh token not above one handed
// out before its Obtain began. Porcupine may find subtler ones (see the visualization).
func (h *history) witnesses(key string) []string {
	var held []*historyOp
	for _, o := range h.ops {
		if o.holds(key) && o.err == nil && o.ret < o.closeAt() {
			held = append(held, o)
		}
	}
	var out []string
	slices.SortFunc(held, func(a, b *historyOp) int { return cmp.Compare(a.ret, b.ret) })
	var open *historyOp // the Lock whose validity reaches furthest so far
	for _, o := range held {
		if open != nil && o.ret < open.closeAt() && o.owner != open.owner && len(out) < 3 {
			out = append(out, fmt.Sprintf("two holders from %v to %v:\n\t\t%v\n\t\t%v",
				ms(o.ret), ms(min(o.closeAt(), open.closeAt())), open, o))
		}
		if open == nil || o.closeAt() > open.closeAt() {
			open = o
		}
	}
	if !h.fenced {
		return out
	}
	byInvoke := slices.Clone(held)
	slices.SortFunc(byInvoke, func(a, b *historyOp) int { return cmp.Compare(a.invoke, b.invoke) })
	var top *historyOp // highest token among Lock returned so far
	i, n := 0, 0
	for _, o := range byInvoke {
		for ; i < len(held) && held[i].ret < o.invoke; i++ {
			if top == nil || held[i].token > top.token {
				top = held[i]
			}
		}
		if top != nil && top.owner != o.owner && o.token <= top.token && n < 3 {
			n++
			out = append(out, fmt.Sprintf("token %d after token %d:\n\t\t%v\n\t\t%v", o.token, top.token, top, o))
		}
	}
	return out
}

func (h *history) keys() []string {
	var keys []string
	for k := range h.samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- Validity against the key's real content ----

// checkValidity: while a Lock's validity is open its owner's value is in the key (in each of
// a multi-key lock's keys), on the server or, with Redlock, on a majority of the instances. Every sample round taken wholly
// inside the validity, its reads at one instant (historyRoundSpread), may miss the value on
// at most N - quorum instances (none with one server). An instance that did not answer the
// round (down, restarting, stalled past it) is not counted against the Lock: it may hold the
// value.
func (h *history) checkValidity(x historyIndex) []string {
	var out []string
	for _, o := range h.ops {
		if o.err != nil || o.closeAt() <= o.ret {
			continue
		}
		for _, key := range o.lockedKeys() {
			if v := h.checkValidityOf(x, o, key); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// checkValidityOf is checkValidity for one key of o: "" when it holds.
func (h *history) checkValidityOf(x historyIndex, o *historyOp, key string) string {
	from, to := o.ret, o.closeAt()
	rounds := h.samples[key]
	i, _ := slices.BinarySearchFunc(rounds, from, func(r sampleRound, t time.Duration) int { return cmp.Compare(r.call(), t) })
	var bad []sampleRound
	for ; i < len(rounds) && rounds[i].call() <= to; i++ {
		r := rounds[i]
		if r.ret() > to || r.spread() > historyRoundSpread {
			continue
		}
		if len(r)-len(x.ownedBy(o.owner, r)) > h.instances-h.quorum {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	r := bad[0]
	var b strings.Builder
	fmt.Fprintf(&b, "at %v..%v (%d samples until %v) %s held %s, but the key had %s\n\tthe Lock: %v",
		ms(r.call()), ms(r.ret()), len(bad), ms(bad[len(bad)-1].ret()), o.owner, key, h.found(x, r), o)
	for _, w := range writers(x, r) {
		if w != o {
			fmt.Fprintf(&b, "\n\twriter: %v", w)
		}
	}
	for _, other := range x.byOwnerKey[o.owner+"\x00"+key] {
		if other != o && other.invoke < to && other.end() > from-time.Second {
			fmt.Fprintf(&b, "\n\tsame owner: %v", other)
		}
	}
	b.WriteString("\n\tsamples:" + h.timeline(key, max(from, r.call()-time.Second), r.ret()))
	b.WriteString(h.diagnose(x, o, key, r))
	return b.String()
}

// ownedBy is the reads of round r that find a value of owner.
func (x historyIndex) ownedBy(owner string, r sampleRound) sampleRound {
	var out sampleRound
	for _, s := range r {
		if w := x.writer(s.value); w != nil && w.owner == owner {
			out = append(out, s)
		}
	}
	return out
}

// found says what the reads of round r found, for a report.
func (h *history) found(x historyIndex, r sampleRound) string {
	var parts []string
	for _, s := range r {
		text := "no value"
		if s.value != "" {
			text = fmt.Sprintf("%q (pttl %v) written by ", s.value, s.pttl)
			if w := x.writer(s.value); w != nil {
				text += w.trace() + " " + w.owner
			} else {
				text += "no operation"
			}
		}
		parts = append(parts, h.instanceName(s.instance)+text)
	}
	return strings.Join(parts, "; ")
}

// writers are the operations whose values the reads of round r found, each once.
func writers(x historyIndex, r sampleRound) []*historyOp {
	var out []*historyOp
	for _, s := range r {
		if w := x.writer(s.value); w != nil && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// quorumPTTL is how long a quorum of the reads still holds their value: the quorum-th
// longest PTTL.
func (h *history) quorumPTTL(held sampleRound) time.Duration {
	pttls := make([]time.Duration, len(held))
	for i, s := range held {
		pttls[i] = s.pttl
	}
	slices.SortFunc(pttls, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	return pttls[h.quorum-1]
}

// diagnose tells how the key came to differ from what Lock o believed: deleted or run
// out, and which calls of the owner could have done it. It guides the reader; the
// violation stands without it.
func (h *history) diagnose(x historyIndex, o *historyOp, key string, bad sampleRound) string {
	var last, lastHeld sampleRound
	for _, r := range h.samples[key] {
		if r.ret() >= bad.call() {
			break
		}
		if held := x.ownedBy(o.owner, r); len(held) >= h.quorum {
			last, lastHeld = r, held
		}
	}
	if last == nil {
		return ""
	}
	pttl := h.quorumPTTL(lastHeld)
	var b strings.Builder
	fmt.Fprintf(&b, "\n\tdiagnosis: last seen with the owner's value at %v..%v, pttl %v", ms(last.call()), ms(last.ret()), pttl)
	levels := x.byOwnerKey[o.owner+"\x00"+key]
	if bad.ret()+historyExpiryMargin < last.call()+pttl {
		b.WriteString("; deleted before that ran out")
		for _, p := range levels {
			if p != o && p.err == nil && p.releaseAt >= last.call()-time.Second && p.releaseAt <= bad.ret() {
				fmt.Fprintf(&b, "\n\t\tdeleted by another level? %s released at %v while %s was still held: a re-entrant release run twice goes two levels down",
					p.trace(), ms(p.releaseAt), o.trace())
			}
		}
		return b.String()
	}
	b.WriteString("; it ran out")
	for _, p := range levels {
		if p == o || p.err != nil || p.invoke > bad.call() || p.end() < o.ret {
			continue
		}
		if p.watchdog && p.invoke >= o.invoke {
			fmt.Fprintf(&b, "\n\t\tshortened by another level? %s, a level of the same owner, renews the shared key to its ttl %v with its watchdog", p.trace(), ms(p.ttl))
		}
		for _, r := range p.refreshes {
			if r.err == nil && r.start <= bad.call() && r.start+r.ttl < o.closeAt() {
				fmt.Fprintf(&b, "\n\t\tshortened by another level? %s, a level of the same owner, refreshed the shared key to %v at %v", p.trace(), ms(r.ttl), ms(r.start))
			}
		}
	}
	longer := slices.ContainsFunc(o.refreshes, func(r refreshCall) bool { return r.err == nil && r.ttl > o.ttl && r.start <= bad.call() })
	if o.watchdog && (longer || o.level > 1) {
		fmt.Fprintf(&b, "\n\t\tdeadline from a late reply? %s's watchdog renews the key to %v, below the deadline a longer Refresh or the re-entry gave it: "+
			"a renewal shortens the key before its reply moves the deadline", o.trace(), ms(o.ttl))
	}
	for _, r := range o.refreshes {
		if o.watchdog && r.err == nil && r.start <= bad.call() && r.end-r.start > o.ttl/3 {
			fmt.Fprintf(&b, "\n\t\tdeadline from a late reply? %s's %v was answered after its watchdog's next renewal could run", o.trace(), r)
		}
	}
	for i, r := range o.refreshes {
		for _, q := range o.refreshes[i+1:] {
			long, short := r, q
			if long.ttl < short.ttl {
				long, short = short, long
			}
			if long.err == nil && short.err == nil && long.start <= short.start && long.end > short.end && short.start < long.end {
				fmt.Fprintf(&b, "\n\t\tdeadline from a late reply? %s's %v and %v ran at once and the longer one's reply came last", o.trace(), long, short)
			}
		}
	}
	return b.String()
}

// timeline shows the sample rounds of key begun in [from, to] where a value changed, with
// their PTTL.
func (h *history) timeline(key string, from, to time.Duration) string {
	var b strings.Builder
	prev := "\x00"
	rounds := h.samples[key]
	for i, r := range rounds {
		if r.call() < from || r.call() > to {
			continue
		}
		var values, reads []string
		for _, s := range r {
			values = append(values, strconv.Itoa(s.instance)+"="+s.value)
			reads = append(reads, fmt.Sprintf("%s%q pttl %v", h.instanceName(s.instance), s.value, s.pttl))
		}
		last := i+1 == len(rounds) || rounds[i+1].call() > to
		if v := strings.Join(values, ","); v != prev || last {
			fmt.Fprintf(&b, "\n\t\t%v..%v: %s", ms(r.call()), ms(r.ret()), strings.Join(reads, ", "))
			prev = v
		}
	}
	return b.String()
}

// ---- Leaks ----

// checkLeaks: a value must be gone within historyLeakBound after its operation ended, and
// a re-entrant value must not count more levels than its owner may still hold, unless a
// server fault may have kept it (a stall long enough to stop the clean-up, or a restart),
// or its Release failed (then it runs out at its TTL, as documented). With Redlock this
// holds for a value on a majority: an instance that ran a request after
// its operation gave up (it was stalled) keeps a stale key until its TTL (docs/redlock.md).
func (h *history) checkLeaks(x historyIndex) []string {
	type leak struct {
		first, last sampleRound
		n           int
		text        string
	}
	leaks := map[string]*leak{}
	var order []string
	for _, key := range h.keys() {
		for _, r := range h.samples[key] {
			for _, reads := range byValue(r) {
				text := h.leakAt(x, key, reads)
				if text == "" {
					continue
				}
				id := key + "\x00" + protocol.BaseOf(reads[0].value)
				if l := leaks[id]; l != nil {
					l.last, l.n = r, l.n+1
					continue
				}
				leaks[id] = &leak{first: r, last: r, n: 1, text: text}
				order = append(order, id)
			}
		}
	}
	var out []string
	for _, id := range order {
		l := leaks[id]
		key, _, _ := strings.Cut(id, "\x00")
		out = append(out, fmt.Sprintf("%s (seen in %d samples from %v to %v)\n\tsamples:%s",
			l.text, l.n, ms(l.first.call()), ms(l.last.ret()), h.timeline(key, l.first.call()-historyLeakBound, l.last.ret()+time.Second)))
	}
	return out
}

// byValue splits the reads of round r that found a value by what it belongs to (a Lock, or
// a re-entrant owner whatever its count: protocol.BaseOf), in instance order.
func byValue(r sampleRound) []sampleRound {
	var out []sampleRound
	for _, s := range r {
		if s.value == "" {
			continue
		}
		i := slices.IndexFunc(out, func(g sampleRound) bool { return protocol.BaseOf(g[0].value) == protocol.BaseOf(s.value) })
		if i < 0 {
			out = append(out, sampleRound{s})
		} else {
			out[i] = append(out[i], s)
		}
	}
	return out
}

// leakAt says what is wrong with the value that the reads of one round found (each read
// finds it, on its instance), or "". A leak must be on a quorum of the instances, each of
// them without a fault that excuses it.
func (h *history) leakAt(x historyIndex, key string, reads sampleRound) string {
	s := reads[0]
	w := x.writer(s.value)
	if w == nil {
		return fmt.Sprintf("%s held %q at %v, which no operation wrote", key, s.value, ms(s.call))
	}
	if !w.reentrant {
		if w.releaseFailed() {
			return ""
		}
		var leaked sampleRound
		for _, s := range reads {
			if !(w.invoke <= s.ret && s.call <= w.end()+historyLeakBound) && !h.excused(s.instance, w.end()-500*time.Millisecond, w.end()+historyLeakBound) {
				leaked = append(leaked, s)
			}
		}
		if len(leaked) < h.quorum {
			return ""
		}
		s = leaked[0]
		return fmt.Sprintf("%s held %q at %v%s, %v after its operation ended\n\t%v",
			key, s.value, ms(s.call), h.onInstances(leaked), ms(s.call-w.end()), w)
	}
	// Levels of the owner the key may still count: Obtains begun by then whose Lock was
	// released (or whose failure came) at most the bound before, or whose Release failed.
	ops := x.byOwnerKey[w.owner+"\x00"+key]
	may := func(s sample) int {
		n := 0
		for _, o := range ops {
			if o.invoke <= s.ret && (s.call <= o.end()+historyLeakBound || o.releaseFailed()) {
				n++
			}
		}
		return n
	}
	var over sampleRound
	for _, s := range reads {
		if v, _ := protocol.ParseValue(s.value); v.Count > may(s) && !h.excused(s.instance, w.invoke-500*time.Millisecond, s.call) {
			over = append(over, s)
		}
	}
	if len(over) < h.quorum {
		return ""
	}
	s = over[0]
	v, _ := protocol.ParseValue(s.value)
	var b strings.Builder
	fmt.Fprintf(&b, "%s held %q (count %d) at %v%s, but at most %d levels of %s could be held then; its levels around then:",
		key, s.value, v.Count, ms(s.call), h.onInstances(over), may(s), w.owner)
	for _, o := range ops {
		if o.end() >= s.call-historyLeakBound-5*time.Second && o.invoke <= s.ret {
			fmt.Fprintf(&b, "\n\t%v", o)
		}
	}
	return b.String()
}

// onInstances names the instances of reads for a report ("" with one server).
func (h *history) onInstances(reads sampleRound) string {
	if h.instances == 1 {
		return ""
	}
	var names []string
	for _, s := range reads {
		names = append(names, strings.TrimSpace(h.instanceName(s.instance)))
	}
	return " on " + strings.Join(names, ", ")
}

// excused tells whether a server fault of instance that may keep a value past its clean-up
// overlapped [from, to].
func (h *history) excused(instance int, from, to time.Duration) bool {
	for _, f := range h.faults {
		if f.instance == instance && f.excuses() && f.start <= to && f.end >= from {
			return true
		}
	}
	return false
}

// ---- Results that contradict the Lock's validity ----

// checkResults: while a Lock's deadline is open the key is its own, so a Release that
// returned before the deadline cannot have found it gone (ErrNotHeld), and a renewal
// refused before the deadline (Lost() with ErrNotHeld) means the key was lost while the
// Lock still relied on it.
func (h *history) checkResults() []string {
	var out []string
	for _, o := range h.ops {
		if o.err != nil || o.worker < 0 {
			continue
		}
		open := o.deadline - historyExpiryMargin
		if errors.Is(o.releaseErr, ErrNotHeld) && !o.lost && o.releaseAt+o.releaseDur < open {
			out = append(out, fmt.Sprintf("Release at %v returned ErrNotHeld at %v, before the Lock's deadline %v\n\t%v",
				ms(o.releaseAt), ms(o.releaseAt+o.releaseDur), ms(o.deadline), o))
		}
		if o.lost && errors.Is(o.lostErr, ErrNotHeld) && o.lostAt < open {
			out = append(out, fmt.Sprintf("a renewal was refused (Lost() at %v: %v) before the Lock's deadline %v\n\t%v",
				ms(o.lostAt), o.lostErr, ms(o.deadline), o))
		}
	}
	return out
}

// ---- Release's time bound ----

func (h *history) checkReleaseBound() []string {
	var out []string
	for _, o := range h.ops {
		if o.err != nil {
			continue
		}
		bound := h.releaseBound + 500*time.Millisecond // held replies, retries, scheduling
		if o.watchdog {
			bound += o.ttl / 3
		}
		if o.releaseDur > bound {
			out = append(out, fmt.Sprintf("Release at %v took %v (bound %v); faults then: %v\n\t%v",
				ms(o.releaseAt), ms(o.releaseDur), bound, h.faultsIn(o.releaseAt, o.releaseAt+o.releaseDur), o))
		}
	}
	return out
}

func (h *history) faultsIn(from, to time.Duration) []serverFault {
	var out []serverFault
	for _, f := range h.faults {
		if f.start <= to && f.end >= from {
			out = append(out, f)
		}
	}
	return out
}

// ---- Read-write locks: readers together, one writer alone, write tokens increasing ----

// rwInput is an acquisition of a read or write lease (output: its token) or a Close (the
// end of that lease's validity).
type rwInput struct {
	close     bool
	id        int
	owner     string
	write     bool
	reentrant bool
}

// rwState is the lock's holders: the writer (owner, token, open write levels) and the read
// levels ("owner/id" sorted, ","-joined), with the tokens seen: lastWrite, the last write
// grant's, and top, the highest any grant reported. Strings only: porcupine compares states
// with ==.
type rwState struct {
	writer      string
	writeToken  int64
	writeLevels string
	readers     string
	lastOwner   string // the last writer, who may re-enter with its token just after it closed
	lastWrite   int64
	top         int64
}

// rwModel: a write lease only while no other owner holds anything (its owner's own read
// levels are a downgrade in progress), a read lease only while no other owner writes. A
// fresh write draws a token above every token reported before; a re-entered write keeps
// the writer's. A read reports the counter: the last write's token or later (a write whose
// Obtain failed may have drawn one), or 0 once the counter has gone.
func rwModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return rwState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(rwState), input.(rwInput)
			if in.close {
				if levels, ok := removeLevel(s.writeLevels, in.id); ok {
					s.writeLevels = levels
					if levels == "" {
						s.writer, s.writeToken = "", 0
					}
					return true, s
				}
				readers, ok := removeReader(s.readers, in.id)
				s.readers = readers
				return ok, s
			}
			token := output.(int64)
			if in.write {
				reenter := in.reentrant && token == s.lastWrite && (s.writer == in.owner || s.writer == "" && s.lastOwner == in.owner)
				if !reenter && (s.writer != "" || token <= s.top) {
					return false, s
				}
				if readersBut(s.readers, in.owner) {
					return false, s
				}
				s.writer, s.writeToken, s.lastOwner, s.lastWrite = in.owner, token, in.owner, token
				s.writeLevels = addLevel(s.writeLevels, in.id)
				s.top = max(s.top, token)
				return true, s
			}
			if s.writer != "" && !(in.reentrant && s.writer == in.owner) || token != 0 && token < s.lastWrite {
				return false, s
			}
			s.readers = addReader(s.readers, in.owner, in.id)
			s.top = max(s.top, token)
			return true, s
		},
		DescribeOperation: func(input, output any) string {
			in := input.(rwInput)
			if in.close {
				return fmt.Sprintf("close h%d", in.id)
			}
			mode := "read"
			if in.write {
				mode = "write"
			}
			return fmt.Sprintf("h%d %s %s token %d", in.id, in.owner, mode, output)
		},
		DescribeState: func(state any) string {
			s := state.(rwState)
			return fmt.Sprintf("writer %q (token %d, levels %s), readers [%s], last write %d, top %d",
				s.writer, s.writeToken, s.writeLevels, s.readers, s.lastWrite, s.top)
		},
	}
}

func addReader(readers, owner string, id int) string {
	rs := []string{}
	if readers != "" {
		rs = strings.Split(readers, ",")
	}
	rs = append(rs, owner+"/"+strconv.Itoa(id))
	slices.Sort(rs)
	return strings.Join(rs, ",")
}

func removeReader(readers string, id int) (string, bool) {
	if readers == "" {
		return "", false
	}
	rs := strings.Split(readers, ",")
	i := slices.IndexFunc(rs, func(r string) bool { return strings.HasSuffix(r, "/"+strconv.Itoa(id)) })
	if i < 0 {
		return readers, false
	}
	return strings.Join(slices.Delete(rs, i, i+1), ","), true
}

// readersBut reports whether a read level of another owner than owner is open.
func readersBut(readers, owner string) bool {
	if readers == "" {
		return false
	}
	for _, r := range strings.Split(readers, ",") {
		if !strings.HasPrefix(r, owner+"/") {
			return true
		}
	}
	return false
}
