package demo

import (
	"testing"
	"time"
)

// The document's fence orders conflicting leases by their tokens: a write grant draws a fresh
// token, a read grant carries the last write grant's.
func TestDocumentFence(t *testing.T) {
	var d document
	steps := []struct {
		what  string
		op    func(int64) bool
		token int64
		want  bool
	}{
		{"first read, no write yet", d.read, 0, true},
		{"writer 10 claims", d.write, 10, true},
		{"writer 10 commits", d.write, 10, true},
		{"reader granted after it (token 10)", d.read, 10, true},
		{"writer 10 again, after that reader read: its lease had ended", d.write, 10, false},
		{"reader granted before writer 10 (token 0), late", d.read, 0, false},
		{"writer 12", d.write, 12, true},
		{"writer 11, granted before 12, late", d.write, 11, false},
		{"reader 10, granted before writer 12, late", d.read, 10, false},
		{"reader 12", d.read, 12, true},
		{"reader 12 again", d.read, 12, true},
		{"writer 13, granted after those readers", d.write, 13, true},
	}
	for _, s := range steps {
		if got := s.op(s.token); got != s.want {
			t.Fatalf("%s: accepted %v, want %v (document %+v)", s.what, got, s.want, d)
		}
	}
}

// The pool refuses a use at or after the deadline presented, and for good a token whose
// deadline it saw pass, even when its holder comes back with a later one.
func TestPoolFence(t *testing.T) {
	p := newPool()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if !p.use(1, at(100), at(0)) || !p.use(2, at(150), at(10)) {
		t.Fatal("uses within their deadlines refused")
	}
	if n := p.inUse(at(20)); n != 2 {
		t.Fatalf("in use %d, want 2", n)
	}
	if !p.use(1, at(200), at(90)) {
		t.Fatal("a use with a renewed deadline refused")
	}
	if p.use(2, at(150), at(150)) {
		t.Fatal("a use at its deadline accepted")
	}
	if p.use(2, at(400), at(160)) {
		t.Fatal("a token whose deadline passed accepted again with a later deadline")
	}
	if n := p.inUse(at(160)); n != 1 {
		t.Fatalf("in use %d after token 2 went stale, want 1", n)
	}
	p.done(1)
	if n := p.inUse(at(160)); n != 0 {
		t.Fatalf("in use %d after token 1 returned, want 0", n)
	}
	if p.use(3, time.Time{}, at(0)) {
		t.Fatal("a use without a confirmed deadline accepted")
	}
}

// history is a lease checker fed by hand, at milliseconds from t0.
type history struct {
	t  *testing.T
	c  *leaseChecker
	t0 time.Time
}

func newHistory(t *testing.T, permits int) *history {
	return &history{t: t, c: newLeaseChecker(newChecker(FencingTokens), permits), t0: time.Now()}
}

func (h *history) at(ms int) time.Time { return h.t0.Add(time.Duration(ms) * time.Millisecond) }

// grant records a lease granted at ms whose deadline Redis confirmed as deadline ms.
func (h *history) grant(worker int, mode leaseMode, token int64, ms, deadline int) *lease {
	l := h.c.grant(worker, mode, token, "v", Healthy, 0, h.at(ms))
	h.c.confirm(l, h.at(deadline))
	return l
}

// op is an operation of l at ms through the resource (read, write or use by mode).
func (h *history) op(l *lease, ms int) bool { return h.c.act(l, h.at(ms)) }

// accepted is an operation of l at ms that a broken resource accepted: how a violating
// history reaches the checker.
func (h *history) accepted(l *lease, ms int) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.recordLocked(l, h.at(ms), true)
}

func (h *history) end(l *lease, ms int, how leaseEnd) { h.c.end(l, h.at(ms), how) }

func (h *history) counters() Counters {
	k, _ := h.c.k.totals()
	return k
}

// A writer frozen past its TTL: a reader takes the document and reads, the writer wakes and
// writes. The document refuses it; the checker sees an overlapping holder, a refusal, a
// lease lost, and nothing unsafe.
func TestLeaseCheckerPausedWriterRefused(t *testing.T) {
	h := newHistory(t, 2)
	w := h.grant(1, modeWrite, 10, 0, 100)
	if !h.op(w, 1) {
		t.Fatal("the writer's claim was refused")
	}
	r := h.grant(2, modeRead, 10, 120, 220)
	if !h.op(r, 121) {
		t.Fatal("the reader's read was refused")
	}
	if h.op(w, 150) {
		t.Fatal("the frozen writer's late write was accepted")
	}
	h.op(r, 160)
	h.end(r, 170, leaseReleased)
	h.end(w, 180, leaseLost)
	k := h.counters()
	if k.Unsafe() || k.StaleRejected != 1 || k.OverlappingHolders != 1 || k.LeasesLost != 1 || k.Sections != 2 {
		t.Fatalf("counters %+v, want safe, 1 refused, 1 overlapping holder, 1 lease lost, 2 sections", k)
	}
}

// The checker must be able to fail: the same history with a document that accepts the late
// write is a stale write accepted and an overlap.
func TestLeaseCheckerCatchesLateWrite(t *testing.T) {
	h := newHistory(t, 2)
	w := h.grant(1, modeWrite, 10, 0, 100)
	h.op(w, 1)
	r := h.grant(2, modeRead, 10, 120, 220)
	h.op(r, 121)
	h.accepted(w, 150)
	h.accepted(w, 151)
	k := h.counters()
	if k.StaleAccepted != 2 || k.Overlaps != 1 || !k.Unsafe() {
		t.Fatalf("counters %+v, want 2 stale accepted, 1 overlap (the writer's, counted once), unsafe", k)
	}
}

// A reader frozen past its TTL reads after a writer granted later has written: the document
// refuses it; a document that accepts it is caught.
func TestLeaseCheckerLateRead(t *testing.T) {
	for _, broken := range []bool{false, true} {
		h := newHistory(t, 2)
		r := h.grant(1, modeRead, 0, 0, 100)
		h.op(r, 1)
		w := h.grant(2, modeWrite, 10, 110, 210)
		h.op(w, 111)
		if broken {
			h.accepted(r, 150)
		} else if h.op(r, 150) {
			t.Fatal("the frozen reader's late read was accepted")
		}
		k := h.counters()
		if k.Unsafe() != broken || k.StaleRejected != map[bool]int64{false: 1, true: 0}[broken] {
			t.Fatalf("broken document %v: counters %+v", broken, k)
		}
	}
}

// Two writers' accepted writes interleaving are an overlap, even with the later one's
// writes first: the order of the grants is the order the resource must follow.
func TestLeaseCheckerCatchesInterleavedWriters(t *testing.T) {
	h := newHistory(t, 2)
	a := h.grant(1, modeWrite, 10, 0, 100)
	b := h.grant(2, modeWrite, 11, 0, 100) // a lock service that gave both: the lease check sees it too
	h.accepted(b, 1)
	h.accepted(a, 2)
	h.end(a, 10, leaseReleased)
	h.end(b, 11, leaseReleased)
	k := h.counters()
	if k.Overlaps != 1 || k.StaleAccepted != 1 || k.LeaseViolations != 1 {
		t.Fatalf("counters %+v, want 1 overlap, 1 stale accepted, 1 lease violation (the pair, once)", k)
	}
}

// Readers share the document; a reader's valid lease beside a writer's is a violation of
// Redis' exclusion, judged from the valid intervals alone.
func TestLeaseCheckerReadersShareWritersDoNot(t *testing.T) {
	h := newHistory(t, 2)
	r1 := h.grant(1, modeRead, 5, 0, 100)
	r2 := h.grant(2, modeRead, 5, 10, 110)
	r3 := h.grant(3, modeRead, 5, 20, 120)
	for _, r := range []*lease{r1, r2, r3} {
		if !h.op(r, 30) {
			t.Fatal("a reader's read refused")
		}
	}
	h.end(r1, 40, leaseReleased)
	h.end(r2, 50, leaseReleased)
	h.end(r3, 60, leaseReleased)
	if k := h.counters(); k.Unsafe() || k.MaxReaders != 3 {
		t.Fatalf("counters %+v, want safe with 3 readers at once", k)
	}
	// A writer granted at 55, while r3 was still valid (released at 60).
	w := h.grant(4, modeWrite, 6, 55, 155)
	h.end(w, 70, leaseReleased)
	if k := h.counters(); k.LeaseViolations != 1 || !k.Unsafe() {
		t.Fatalf("counters %+v, want 1 lease violation", k)
	}
}

// A writer released before its deadline, then a reader: no violation; the release, not the
// deadline, ends the valid interval.
func TestLeaseCheckerReleaseEndsTheLease(t *testing.T) {
	h := newHistory(t, 2)
	w := h.grant(1, modeWrite, 10, 0, 1000)
	h.op(w, 1)
	h.end(w, 20, leaseReleased)
	r := h.grant(2, modeRead, 10, 25, 1025)
	h.op(r, 26)
	h.end(r, 30, leaseReleased)
	if k := h.counters(); k.Unsafe() || k.OverlappingHolders != 0 {
		t.Fatalf("counters %+v, want a clean hand-off", k)
	}
}

// N permits: N users at once are fine; an (N+1)th use while they are in use is an overlap;
// N+1 valid permit leases at once a lease violation.
func TestLeaseCheckerPermitBound(t *testing.T) {
	h := newHistory(t, 2)
	a := h.grant(1, modePermit, 1, 0, 100)
	b := h.grant(2, modePermit, 2, 0, 100)
	h.op(a, 1)
	h.op(b, 2)
	h.op(a, 50)
	h.op(b, 50)
	if k := h.counters(); k.Unsafe() || k.MaxPermits != 2 {
		t.Fatalf("counters %+v, want safe with 2 permits in use", k)
	}
	c := h.grant(3, modePermit, 3, 10, 110)
	h.op(c, 20) // a, b and c all in use at 20: a pool the semaphore over-granted
	h.op(a, 60)
	k := h.counters()
	if k.Overlaps == 0 || k.MaxPermits != 3 {
		t.Fatalf("counters %+v, want an overlap and 3 permits in use", k)
	}
	h.end(a, 70, leaseReleased)
	h.end(b, 71, leaseReleased)
	h.end(c, 72, leaseReleased)
	if k := h.counters(); k.LeaseViolations != 1 {
		t.Fatalf("counters %+v, want 1 lease violation (3 permits valid at once, counted once)", k)
	}
}

// A permit holder frozen past its deadline: its late use is refused; a pool that accepts it
// is caught (a stale use accepted, and with the pool full, an overlap).
func TestLeaseCheckerPausedPermit(t *testing.T) {
	for _, broken := range []bool{false, true} {
		h := newHistory(t, 1)
		a := h.grant(1, modePermit, 1, 0, 100)
		h.op(a, 1)
		b := h.grant(2, modePermit, 2, 110, 210)
		h.op(b, 111)
		if broken {
			h.accepted(a, 150)
		} else if h.op(a, 150) {
			t.Fatal("the frozen holder's late use was accepted")
		}
		h.end(a, 160, leaseLost)
		h.end(b, 170, leaseReleased)
		k := h.counters()
		want := Counters{Sections: 2, StaleRejected: 1, OverlappingHolders: 1, LeasesLost: 1, MaxPermits: 1}
		if broken {
			want.StaleRejected, want.StaleAccepted, want.Overlaps, want.MaxPermits = 0, 1, 1, 2
		}
		if k != want {
			t.Fatalf("broken pool %v: counters %+v, want %+v", broken, k, want)
		}
	}
}

// A crashed holder's lease blocks until its deadline; the grant that follows it counts as
// a take-over, once. At the pool only when the crashed permit was needed.
func TestLeaseCheckerTakeOverAfterCrash(t *testing.T) {
	h := newHistory(t, 2)
	w := h.grant(1, modeWrite, 10, 0, 100)
	h.op(w, 1)
	h.end(w, 5, leaseCrashed)
	r := h.grant(2, modeRead, 10, 101, 200)
	h.op(r, 102)
	r2 := h.grant(3, modeRead, 10, 103, 200)
	h.end(r, 110, leaseReleased)
	h.end(r2, 110, leaseReleased)
	if k := h.counters(); k.ExpiredAfterCrash != 1 || k.LeasesLost != 1 || k.Unsafe() {
		t.Fatalf("counters %+v, want 1 take-over, 1 lease lost, safe", k)
	}
	// Pool of 2: one permit crashed; a grant beside one other holder needs it back.
	a := h.grant(4, modePermit, 20, 200, 300)
	h.end(a, 201, leaseCrashed)
	b := h.grant(5, modePermit, 21, 210, 400) // room without a's permit: no take-over
	c := h.grant(6, modePermit, 22, 301, 400) // b holds, a's ran out: c has a's permit
	h.end(b, 302, leaseReleased)
	h.end(c, 303, leaseReleased)
	if k := h.counters(); k.ExpiredAfterCrash != 2 || k.Unsafe() {
		t.Fatalf("counters %+v, want 2 take-overs, safe", k)
	}
}

// Pruning keeps what later checks need: a long-held lease is still judged against the
// leases that came and went while it was held.
func TestLeaseCheckerPruneKeepsWhatHeldLeasesNeed(t *testing.T) {
	h := newHistory(t, 1)
	long := h.grant(1, modePermit, 1, 0, 10_000)
	h.op(long, 1)
	for i := range 20 { // short permits, each one beside the long one: over-granted, pruned never
		p := h.grant(2, modePermit, int64(2+i), 10+10*i, 10_000)
		h.op(p, 11+10*i)
		h.end(p, 15+10*i, leaseReleased)
	}
	if k := h.counters(); k.Unsafe() {
		t.Fatalf("counters %+v before the long lease acted again and ended: each pair is judged then", k)
	}
	h.op(long, 500)
	h.end(long, 501, leaseReleased)
	if k := h.counters(); k.LeaseViolations != 1 || k.Overlaps != 1 || k.MaxPermits != 2 {
		t.Fatalf("counters %+v, want the long lease's overlap and lease violation (each counted once), 2 permits in use", k)
	}
	if n := len(h.c.leases); n != 21 {
		t.Errorf("%d leases kept right after the last ended, want all 21 (pruneSlack)", n)
	}
	h.end(h.grant(3, modePermit, 30, 20_000, 30_000), 20_001, leaseReleased)
	if n := len(h.c.leases); n != 1 {
		t.Errorf("%d leases kept %v after the others ended, want only the last", n, pruneSlack)
	}
}
