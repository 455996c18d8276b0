package ui

import (
	"fmt"
	"testing"
	"time"
)

// spanText describes the holdings of a key's history in order, as "holder[from,to)end" with
// times in seconds from t0 (to "…" while open), sections as "holder{from,to}".
func spansText(k *keyHistory) string {
	if k == nil {
		return "untracked"
	}
	out := ""
	sec := func(t time.Time) string { return fmt.Sprintf("%g", t.Sub(t0).Seconds()) }
	for _, s := range k.spans {
		to := "…"
		if !s.open() {
			to = sec(s.to)
		}
		if s.section {
			out += fmt.Sprintf("%s{%s,%s} ", s.holder, sec(s.from), sec(s.to))
			continue
		}
		out += fmt.Sprintf("%s[%s,%s)%d ", s.holder, sec(s.from), to, s.end)
	}
	return out
}

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func checkSpans(t *testing.T, h *lockHistory, id, want string) {
	t.Helper()
	if got := spansText(h.of(id)); got != want {
		t.Errorf("%s: spans %q, want %q", id, got, want)
	}
}

// TestHistoryEventsInAnyOrder: events make one holding each whatever order they arrive in
// and however often; a holding the next one starts ends there at the latest, or at its
// expiry when nothing renewed it.
func TestHistoryEventsInAnyOrder(t *testing.T) {
	h := newLockHistory()
	// In order, each event twice.
	for range 2 {
		h.held("k", "a", "va", at(0), 10*time.Second, true)
		h.ended("k", "a", "va", at(4), 0, endReleased)
		h.held("k", "b", "vb", at(4), 10*time.Second, true)
	}
	checkSpans(t, &h, "k", "a[0,4)1 b[4,…)0 ")

	// Out of order: the release before the acquisition, the next holder before both.
	h2 := newLockHistory()
	h2.held("k", "b", "vb", at(5), 10*time.Second, true)
	h2.ended("k", "a", "va", at(4), 3*time.Second, endReleased)
	h2.held("k", "a", "va", at(1), 10*time.Second, true)
	checkSpans(t, &h2, "k", "a[1,4)1 b[5,…)0 ")

	// A holder that stopped renewing: its holding ends at its expiry, before the next one.
	h3 := newLockHistory()
	h3.held("k", "a", "va", at(0), 2*time.Second, true)
	h3.held("k", "a", "va", at(1), 2*time.Second, false) // a renewal
	h3.held("k", "b", "vb", at(5), 2*time.Second, true)
	checkSpans(t, &h3, "k", "a[0,3)3 b[5,…)0 ")
	// A lost event after that keeps the expiry (it came first) and marks the loss.
	h3.ended("k", "a", "va", at(6), 0, endLost)
	checkSpans(t, &h3, "k", "a[0,3)3 b[5,…)0 ")
	if k := h3.of("k"); len(k.marks) != 1 || k.marks[0].kind != markLost {
		t.Errorf("marks %+v, want one lost", k.marks)
	}
	// The same mark twice is one mark.
	h3.mark("k", "a", markStale, at(6))
	h3.mark("k", "a", markStale, at(6))
	if n := len(h3.of("k").marks); n != 2 {
		t.Errorf("%d marks, want 2", n)
	}
}

// TestHistoryCensus: the census opens a holding when it reads a new value, ends the one
// before (at its expiry when that came first), ends it when the key is gone, and opens a
// new one when the key comes back with the same value; untracked keys are ignored; an event
// dates a holding the census saw first.
func TestHistoryCensus(t *testing.T) {
	h := newLockHistory()
	h.observed("k", "a", "va", at(0), time.Time{}, 5*time.Second, -1)
	if h.of("k") != nil {
		t.Fatal("an untracked key's record was recorded")
	}
	h.track("k", at(0))
	h.observed("k", "a", "va", at(1), at(-2), 5*time.Second, 1)
	h.observed("k", "a", "va", at(2), at(-2), 5*time.Second, 2)
	h.observed("k", "b", "vb", at(4), at(3), 5*time.Second, 0)
	h.gone("k", at(6))
	h.observed("k", "b", "vb", at(20), at(19), 5*time.Second, 0) // deleted, then re-created with the same value
	h.observed("k", "b", "vb", at(40), at(19), 5*time.Second, 0) // past its TTL read at 20: renewed unseen, one holding
	checkSpans(t, &h, "k", "a[-2,4)4 b[4,6)5 b[20,…)0 ")
	if n := len(h.of("k").waiters); n != 5 {
		t.Errorf("%d waiter samples, want 5", n)
	}

	h.track("e", at(0))
	h.observed("e", "c", "vc", at(2), time.Time{}, 0, -1)
	h.held("e", "c", "vc", at(1.5), 0, true) // the event, later: it dates the holding
	h.ended("e", "c", "vc", at(2.5), 0, endReleased)
	h.observed("e", "c", "vc", at(2.2), time.Time{}, 0, -1) // read before the release, delivered after
	checkSpans(t, &h, "e", "c[1.5,2.5)1 ")

	h.track("f", at(0))
	h.observed("f", "d", "vd", at(1), time.Time{}, 0, -1) // a pass that started before the acquisition
	h.held("f", "d", "vd", at(1.5), 0, true)
	h.held("f", "d", "vd", at(1.8), 0, false) // a renewal moves nothing
	checkSpans(t, &h, "f", "d[1.5,…)0 ")

	// A pass that missed a locklib lock (SCAN passed its key while it was being set): the same
	// value seen again is the same holding, not a new one.
	h.held("g", "x", "vx", at(0), 0, true)
	h.gone("g", at(0.5))
	h.observed("g", "x", "vx", at(0.6), time.Time{}, 0, -1)
	checkSpans(t, &h, "g", "x[0,…)0 ")
}

// TestHistoryBounds: what leaves the window is forgotten, keys nothing happened to for a
// window are dropped, the least recently touched key makes room for a new one, and a key's
// logs stay within their caps.
func TestHistoryBounds(t *testing.T) {
	h := newLockHistory()
	h.window, h.maxKeys = time.Minute, 3
	h.held("old", "a", "v1", at(0), 0, true)
	h.ended("old", "a", "v1", at(1), 0, endReleased)
	h.waiting("old", at(1), 2)
	h.mark("old", "a", markPause, at(1))
	h.held("old", "b", "v2", at(90), 0, true) // touches "old" 89s later: the first holding left the window
	checkSpans(t, &h, "old", "b[90,…)0 ")
	if k := h.of("old"); len(k.marks) != 0 || len(k.waiters) != 0 {
		t.Errorf("marks %v waiters %v outside the window kept", k.marks, k.waiters)
	}

	h.waiting("k2", at(10), 1)
	h.waiting("k3", at(100), 1)
	h.waiting("k4", at(101), 1) // a fourth key: k2, the least recently touched, goes
	if h.of("k2") != nil || h.of("k3") == nil || h.of("k4") == nil || h.of("old") == nil || len(h.keys) != 3 {
		t.Errorf("keys %v after the cap", h.keys)
	}
	h.prune(at(155)) // a window after 90: "old" goes, k3 and k4 stay
	if h.of("old") != nil || h.of("k3") == nil || len(h.keys) != 2 {
		t.Errorf("keys %v after prune", h.keys)
	}

	h2 := newLockHistory()
	for i := range historySpans + 10 {
		v := fmt.Sprint(i)
		h2.held("busy", "a", v, at(float64(i)/10), 0, true)
		h2.ended("busy", "a", v, at(float64(i)/10+0.05), 0, endReleased)
		h2.waiting("busy", at(float64(i)/10), i)
		h2.waiting("busy", at(float64(i)/10+0.05), i)
		h2.mark("busy", "a", markStale, at(float64(i)/10))
	}
	k := h2.of("busy")
	if len(k.spans) != historySpans || len(k.waiters) != historySamples || len(k.marks) != historyMarks {
		t.Errorf("%d spans %d samples %d marks, want %d %d %d", len(k.spans), len(k.waiters), len(k.marks), historySpans, historySamples, historyMarks)
	}
	if first := k.spans[0].value; first != "10" {
		t.Errorf("oldest span kept %s, want 10 (the oldest dropped first)", first)
	}
}

// TestSharedLeaseSectionsOverlapOnlyWhenTheyConflict: in the rw-pool demo readers share the
// document and permits share the pool; only a writer beside another holder is an overlap.
func TestSharedLeaseSectionsOverlapOnlyWhenTheyConflict(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"read", "read", 0}, {"permit", "permit", 0}, {"read", "write", 1}, {"write", "write", 1}, {"write", "read", 1},
	}
	for _, c := range cases {
		h := newLockHistory()
		h.sections("k", at(0), []sectionSight{{"w1", 1, c.a}})
		h.sections("k", at(0.2), []sectionSight{{"w1", 1, c.a}, {"w2", 1, c.b}})
		h.sections("k", at(0.4), nil)
		if got := overlaps(h.of("k"), at(2)); len(got) != c.want {
			t.Errorf("%s beside %s: %d overlaps, want %d", c.a, c.b, len(got), c.want)
		}
	}
}

// TestHistorySectionsAndCrash: a demo worker's section runs from its first sight working to
// its last; a crash silences its holder's holding from then on.
func TestHistorySectionsAndCrash(t *testing.T) {
	h := newLockHistory()
	w1, w1again, w2 := sectionSight{"w1", 1, ""}, sectionSight{"w1", 2, ""}, sectionSight{"w2", 7, ""}
	h.sections("k", at(0), []sectionSight{w1})
	h.sections("k", at(0.2), []sectionSight{w1, w2})
	h.sections("k", at(0.4), []sectionSight{w2})
	h.sections("k", at(0.6), nil)
	h.sections("k", at(0.8), []sectionSight{w1again})
	h.sections("k", at(1.0), []sectionSight{w1again})
	h.sections("k", at(1.2), []sectionSight{{"w1", 3, ""}}) // its next section, no sight between: two sections
	checkSpans(t, &h, "k", "w1{0,0.2} w2{0.2,0.4} w1{0.8,1} w1{1.2,1.2} ")
	if got := overlaps(h.of("k"), at(2)); len(got) != 1 || !got[0][0].Equal(at(0.2)) || !got[0][1].Equal(at(0.2)) {
		t.Errorf("overlaps %v, want the one sight of both at 0.2", got)
	}
	if got := overlaps(h.of("k"), at(0.6)); len(got) != 0 {
		t.Errorf("overlaps %v 0.4 s after: drawn before the events and reads of the moment could come in", got)
	}

	// The census sees the value of a worker in its section after it began: the holding began
	// when the worker was seen working, not before the holding the census saw last.
	h.track("n", at(0))
	h.observed("n", "w1", "v1", at(0), time.Time{}, time.Second, -1)
	h.sections("n", at(0.5), []sectionSight{{"w2", 1, ""}})
	h.observed("n", "w2", "v2", at(1), time.Time{}, time.Second, -1)
	h.sections("n", at(1.2), []sectionSight{{"w3", 1, ""}})
	h.observed("n", "w1", "v1", at(0.4), time.Time{}, time.Second, -1) // a record read before, delivered late: nothing new
	h.observed("n", "w3", "v3", at(2), time.Time{}, time.Second, -1)
	checkSpans(t, &h, "n", "w1[0,0.5)4 w2{0.5,0.5} w2[0.5,1.2)4 w3{1.2,1.2} w3[1.2,…)0 ")

	h.held("c", "w1", "v1", at(0), 2*time.Second, true)
	h.mark("c", "w1", markCrash, at(1))
	// The crash heard of before the holding it ends (a snapshot's event before the pub/sub's).
	h.mark("c", "w2", markCrash, at(4))
	h.held("c", "w2", "v2", at(3.5), 2*time.Second, true)
	for i, want := range []time.Time{at(1), at(4)} {
		if s := h.of("c").spans[i]; !s.silent.Equal(want) {
			t.Errorf("%s silent from %v, want %v", s.holder, s.silent, want)
		}
	}
}
