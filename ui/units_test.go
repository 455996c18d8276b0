package ui

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/present/presenttest"
	"github.com/lockscope/lockscope/scanner"
)

// A filter with a glob character is a glob on the key, with the scanner's (Redis's) rules.
func TestMatcherGlob(t *testing.T) {
	cases := []struct {
		filter, key string
		want        bool
	}{
		{"lock:*:7", "lock:cart:7", true},
		{"lock:*:7", "lock:cart:77", false},
		{"lock:[a-c]x", "lock:bx", true},
		{"lock:?", "lock:ab", false},
		{"*order*", "lock:ORDER:1", false}, // globs are case-sensitive, like SCAN MATCH
	}
	for _, c := range cases {
		if got := matches(c.filter, scanner.Lock{Key: c.key}); got != c.want {
			t.Errorf("filter %q on %q = %v, want %v", c.filter, c.key, got, c.want)
		}
	}
}

// matches applies filter to l at t0 with the default --stuck-after.
func matches(filter string, l scanner.Lock) bool {
	return newMatcher(filter).match(&l, t0, present.DefaultStuckAfter)
}

func TestMatcherSubstringIsCaseInsensitive(t *testing.T) {
	if !matches("Order", scanner.Lock{Key: "lock:ORDER:1"}) || !matches("Order", scanner.Lock{Key: "x", Node: "order-svc"}) ||
		!matches("Order", scanner.Lock{Key: "x", Trace: "my-order"}) {
		t.Fatal("case-insensitive substring on key, node and trace")
	}
	if matches("Order", scanner.Lock{Key: "lock:cart", Node: "api", Trace: "req"}) {
		t.Fatal("matched unrelated text")
	}
	if !matches("é", scanner.Lock{Key: "lock:café"}) {
		t.Fatal("non-ASCII substring")
	}
}

// TestMatcherByMeaning: format:, holder:, meta: and is: words, negation, and every word
// must match.
func TestMatcherByMeaning(t *testing.T) {
	bsm := scanner.Lock{Key: "lock:bsm", Format: scanner.FormatBSM, Value: "abcdefghijklmnopqrstuvjob=42", TTL: time.Minute, FetchedAt: t0}
	stuck := scanner.Lock{Key: "lock:old", Format: scanner.FormatLockscope, Node: "host-1", AcquiredAt: t0.Add(-time.Hour), NoExpiry: true, FetchedAt: t0}
	queued := scanner.Lock{Key: "lock:q", Format: scanner.FormatRedisson, Node: "8f0c2a56-4b1e-4c7e-9d3a-1b2c3d4e5f60:1", HasWaiters: true, Waiters: 2, TTL: time.Minute, FetchedAt: t0}
	cases := []struct {
		filter string
		want   []string
	}{
		{"format:redisson", []string{"lock:q"}},
		{"format:RED", []string{"lock:q"}},
		{"-format:redisson", []string{"lock:bsm", "lock:old"}},
		{"holder:host-1", []string{"lock:old"}},
		{"holder:-", []string{"lock:bsm"}},
		{"meta:job=42", []string{"lock:bsm"}},
		{"meta:", []string{"lock:bsm"}},
		{"is:stuck", []string{"lock:old"}},
		{"is:noexpiry", []string{"lock:old"}},
		{"is:waiters", []string{"lock:q"}},
		{"-is:stuck lock:", []string{"lock:bsm", "lock:q"}},
		{"is:stuck format:bsm", nil},
		{"lock:* -lock:q", []string{"lock:bsm", "lock:old"}},
		{"is:bogus", nil},
	}
	for _, c := range cases {
		var got []string
		for _, l := range []scanner.Lock{bsm, stuck, queued} {
			if matches(c.filter, l) {
				got = append(got, l.Key)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("filter %q: %v, want %v", c.filter, got, c.want)
		}
	}
	if p := newMatcher("is:bogus").problem; !strings.Contains(p, "is:stuck") {
		t.Errorf("an unknown flag does not name the flags: %q", p)
	}
}

func TestBarGlyphs(t *testing.T) {
	cases := []struct {
		frac float64
		want string
	}{
		{1, "██████"}, {0, "░░░░░░"}, {0.5, "███░░░"}, {1.5, "██████"}, {-1, "░░░░░░"},
		{0.5 + 1.0/48, "███▏░░"},
	}
	for _, c := range cases {
		filled, rest := barGlyphs(c.frac, 6)
		if filled+rest != c.want {
			t.Errorf("barGlyphs(%v) = %q, want %q", c.frac, filled+rest, c.want)
		}
	}
}

// TestLockRowKeepsTheRecord: a row gives back the record it was built from, field for field,
// for the common lock and for the ones with rare fields (redisson owners, a Redlock quorum, a
// semaphore's shared record, a holder that is not part of the value, an acquisition time in
// another location).
func TestLockRowKeepsTheRecord(t *testing.T) {
	quorum := &scanner.Quorum{Instances: []scanner.Instance{{Addr: "a:1", Value: "v", Present: true}}, Agree: 1, Needed: 1, Total: 1, Reached: true}
	fetched := time.Now() // with a monotonic reading
	locks := []scanner.Lock{
		{Key: "lock:plain", Format: scanner.FormatLockscope, Type: "string", Node: "api-1", Trace: "req-9",
			AcquiredAt: time.UnixMilli(1764400000123), TTL: 5 * time.Second, FetchedAt: fetched, Fence: 7, HasFence: true,
			Waiters: 2, HasWaiters: true, Reentry: 3, Value: "api-1:req-9:1764400000123:00000000000000ff:3", Addr: "127.0.0.1:6379"},
		{Key: "lock:redlock", Format: scanner.FormatRedsync, Value: "v", NoExpiry: true, Truncated: true, Quorum: quorum, FetchedAt: fetched},
		{Key: "lock:other", Node: "not-in-value", Value: "x", AcquiredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), FetchedAt: fetched},
		{Key: "lock:sem", Format: scanner.FormatRedisson, Type: "string", Value: "3", NoExpiry: true, FetchedAt: fetched,
			Shared: &scanner.Shared{Kind: scanner.KindSemaphore, Available: 3, HasAvailable: true, HoldersUnknown: true}},
	}
	for _, l := range append(locks, derefAll(presenttest.Locks())...) {
		s := newLockSet(false)
		s.apply([]scanner.Lock{l}, 1)
		if got := s.get(l.Key); !reflect.DeepEqual(*got, l) {
			t.Errorf("%s: the row gives back\n%+v\nwant\n%+v", l.Key, *got, l)
		}
	}
}

func derefAll(locks []*scanner.Lock) []scanner.Lock {
	out := make([]scanner.Lock, len(locks))
	for i, l := range locks {
		out[i] = *l
	}
	return out
}

// TestLockSetIndexAgreesWithAMap adds and removes keys at random, many enough for the index to
// grow and for removals to move entries back along their probe runs, and checks after every
// step that every key is found where it is and that removed keys are not found.
func TestLockSetIndexAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newLockSet(false)
	want := map[string]bool{}
	for step := range 20000 {
		key := "k" + strconv.Itoa(rng.IntN(3000))
		if rng.IntN(3) == 0 {
			s.remove(key)
			delete(want, key)
		} else {
			s.apply([]scanner.Lock{{Key: key}}, 1)
			want[key] = true
		}
		if step%500 != 0 {
			continue
		}
		if s.len() != len(want) {
			t.Fatalf("step %d: %d rows, want %d", step, s.len(), len(want))
		}
		for i, r := range s.rows {
			if at, ok := s.pos.find("", r.key, s.rows); !ok || at != i || !want[r.key] {
				t.Fatalf("step %d: %s at %d found at %d (%v)", step, r.key, i, at, ok)
			}
		}
		for k := range 3000 {
			if key := "k" + strconv.Itoa(k); !want[key] && s.get(key) != nil {
				t.Fatalf("step %d: removed %s still found", step, key)
			}
		}
	}
}

func TestLockSetApplyRemovePrune(t *testing.T) {
	s := newLockSet(false)
	s.apply([]scanner.Lock{{Key: "a", Value: "1", TTL: 10 * time.Second}, {Key: "b"}, {Key: "c"}}, 1)
	s.apply([]scanner.Lock{{Key: "a", Value: "1", TTL: 4 * time.Second}, {Key: "c"}}, 2)
	if s.span(&scanner.Lock{Key: "a"}) != 10*time.Second {
		t.Fatalf("span of a re-read lock: %v", s.span(&scanner.Lock{Key: "a"}))
	}
	if n := s.prune(2, nil); n != 1 || s.get("b") != nil || s.len() != 2 {
		t.Fatalf("prune dropped %d, len %d", n, s.len())
	}
	s.apply([]scanner.Lock{{Key: "a", Value: "2", TTL: 3 * time.Second}}, 3)
	if s.span(&scanner.Lock{Key: "a"}) != 3*time.Second {
		t.Fatalf("a new holder keeps the old span: %v", s.span(&scanner.Lock{Key: "a"}))
	}
	s.remove("a")
	if s.get("a") != nil || s.get("c") == nil || s.len() != 1 || s.span(&scanner.Lock{Key: "c"}) != 0 {
		t.Fatal("remove broke the set")
	}
	for i, r := range s.rows {
		if at, ok := s.pos.find("", r.key, s.rows); !ok || at != i {
			t.Fatalf("position index out of sync at %s: %d, %v", r.key, at, ok)
		}
	}
}

func TestSafeRenderingOfHostileValues(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	evil := scanner.Lock{
		Key: "lock:\x1b[2Jevil", Format: scanner.FormatOpaque, Node: "n\x1b]0;pwned\x07", Value: "\x1b[31mred\r\n",
		TTL: time.Minute, FetchedAt: t0,
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{evil}})
	selectKey(t, m, evil.Key)
	typeKeys(m, "enter")
	out := m.View().Content
	if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\x07") {
		t.Fatal("a value's escape sequence reached the terminal")
	}
	mustContain(t, ansi.Strip(out), `lock:\x1b[2Jevil`)
}

// The dialog, the notice and the event log escape what they show too (the notice and the log
// get the key as read, escaped when drawn).
func TestSafeRenderingOfHostileValuesInDialogNoticeAndLog(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	evil := scanner.Lock{
		Key: "lock:\x1b[2Jevil", Format: scanner.FormatOpaque, Node: "n\x1b]0;pwned\x07", Value: "\x1b[31mred\r\n",
		TTL: time.Minute, FetchedAt: t0,
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{evil}})
	selectKey(t, m, evil.Key)
	typeKeys(m, "d")
	dialog := m.View().Content
	m.dialog = nil
	m.setNotice("releasing "+evil.Key+"…", false)
	m.events.open = true
	m.events.add(logEntry{at: t0, kind: kindAction, key: evil.Key, text: "released " + evil.Key})
	screen := m.View().Content
	for what, out := range map[string]string{"dialog": dialog, "notice and log": screen} {
		if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\x07") || strings.Contains(out, "\r") {
			t.Fatalf("%s: a value's escape sequence reached the terminal", what)
		}
	}
	mustContain(t, ansi.Strip(dialog), `\x1b[31mred\r\n`) // the value, escaped once
	mustContain(t, ansi.Strip(screen), `releasing lock:\x1b[2Jevil`)
	mustContain(t, ansi.Strip(screen), `released lock:\x1b[2Jevil`)
}

func TestEntryFromEvent(t *testing.T) {
	e := entryFromEvent(protocol.Event{Type: string(locklib.EventLost), Key: "lock:a", Node: "n1", Trace: "t", Token: 9,
		HoldMs: 1500, Reason: "renewal refused", AtMs: t0.UnixMilli()})
	if e.kind != "lost" || e.key != "lock:a" || !e.at.Equal(t0) {
		t.Fatalf("entry %+v", e)
	}
	for _, want := range []string{"node=n1", "trace=t", "fence=9", "held=1.5s", "reason=renewal refused"} {
		mustContain(t, e.text, want)
	}
}

func TestRecentSetDropsDuplicates(t *testing.T) {
	r := newRecentSet(2)
	if !r.add("a") || r.add("a") || !r.add("b") || !r.add("c") {
		t.Fatal("dedup within the window")
	}
	if !r.add("a") { // evicted by b, c
		t.Fatal("an evicted entry is new again")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(`{"type":"acquired","key":"lock:a","node":"n1","token":7,"at_ms":1}`)
	f.Add(`{"type":"x"}`)
	f.Add("not json")
	f.Fuzz(func(t *testing.T, payload string) {
		ev, err := decodeEvent(payload)
		if err != nil {
			return
		}
		if ev.Type == "" || ev.Key == "" {
			t.Fatalf("accepted an event without type or key: %+v", ev)
		}
		// Whatever the event holds, its log line renders without panicking or escapes.
		line := eventLog{entries: []logEntry{entryFromEvent(ev)}}.view(80, 1, monoStyles())
		if strings.ContainsRune(line, 0x1b) { // mono styles emit no escapes of their own
			t.Fatalf("raw escape in %q", line)
		}
	})
}

// TestTableShowsARemovedKeyAsGone: the view index holds keys, so a key that left the census
// after the index was built is drawn from no record at all: as gone, not as the record it had.
func TestTableShowsARemovedKeyAsGone(t *testing.T) {
	s := newLockSet(false)
	s.apply([]scanner.Lock{{Key: "lock:kept", Node: "node-kept", Value: "node-kept:-:1:ff", TTL: time.Minute, FetchedAt: t0},
		{Key: "lock:removed", Node: "node-removed", Value: "node-removed:-:1:ff", TTL: time.Minute, FetchedAt: t0}}, 1)
	v := buildView(s.snapshot(), viewQuery{}, viewBuild{now: t0, stuckAfter: time.Hour})
	s.remove("lock:removed")
	tbl := lockTable{height: 5}
	rc := rowContext{now: t0, span: s.span, jumped: notJumped, st: monoStyles()}
	out := ansi.Strip(tbl.view(v, s.get, 120, viewQuery{}, rc))
	if !strings.Contains(out, "node-kept") || !strings.Contains(out, "lock:removed") || strings.Contains(out, "node-removed") {
		t.Fatalf("table:\n%s", out)
	}
}

// TestColumnWidthPolicy: long keys take at most their share of a wide screen; the holder gets
// what it needs of the rest (it took 6 of 200 columns beside a 150-character key).
func TestColumnWidthPolicy(t *testing.T) {
	owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1234567"
	long := &scanner.Lock{Key: "lock:" + strings.Repeat("k", 150), Node: owner, Trace: "trace-1"}
	c := layoutColumns(200, []*scanner.Lock{long}, false, notJumped)
	if c.holder != len(owner) || c.trace != len("trace-1") {
		t.Errorf("holder %d trace %d, want %d and 7 (key %d)", c.holder, c.trace, len(owner), c.key)
	}
	short := &scanner.Lock{Key: "lock:a", Node: owner}
	if c := layoutColumns(200, []*scanner.Lock{short}, false, notJumped); c.holder != len(owner) || c.key < 90 { // the rest of 200 columns, after the fixed ones
		t.Errorf("a short key leaves the spare width unused: key %d holder %d", c.key, c.holder)
	}
}
