package present

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

func TestDuration(t *testing.T) {
	cases := map[time.Duration]string{
		-1200 * time.Millisecond:         "-1.2s", // an age under clock skew
		0:                                "0ms",
		950 * time.Millisecond:           "950ms",
		4290 * time.Millisecond:          "4.2s", // truncated, never rounded up
		12345 * time.Millisecond:         "12s",
		37 * time.Second:                 "37s",
		12*time.Minute + 5*time.Second:   "12m05s",
		3*time.Hour + 7*time.Minute:      "3h07m",
		47*time.Hour + 59*time.Minute:    "47h59m",
		5*24*time.Hour + 2*time.Hour + 1: "5d02h",
	}
	for d, want := range cases {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

var t0 = time.Date(2025, 11, 29, 9, 0, 0, 0, time.UTC)

func TestAgeTTLAndFlags(t *testing.T) {
	old := scanner.Lock{Key: "a", AcquiredAt: t0.Add(-10 * time.Minute), TTL: 4290 * time.Millisecond, FetchedAt: t0, Truncated: true}
	forever := scanner.Lock{Key: "b", NoExpiry: true, FetchedAt: t0}
	if got := Age(&old, t0); got != "10m00s" {
		t.Errorf("age %q", got)
	}
	if got := Age(&forever, t0); got != Unknown {
		t.Errorf("unknown age shown as %q", got)
	}
	for now, want := range map[time.Time]string{t0: "4.2s", t0.Add(4 * time.Second): "290ms", t0.Add(5 * time.Second): Expired} {
		if got := TTL(&old, now); got != want {
			t.Errorf("TTL at %v = %q, want %q", now.Sub(t0), got, want)
		}
	}
	if got := TTL(&forever, t0); got != Never {
		t.Errorf("no-expiry TTL %q", got)
	}
	if got := FlagsText(&old, t0, 5*time.Minute); got != "STUCK value-cut" {
		t.Errorf("flags %q", got)
	}
	if Stuck(&old, t0, 0) {
		t.Error("--stuck-after 0 must turn the flag off")
	}
	q := scanner.Lock{Key: "c", FetchedAt: t0, Quorum: &scanner.Quorum{Agree: 1, Needed: 2, Total: 3}}
	if got := FlagsText(&q, t0, time.Minute); got != "NO-QUORUM 1/3" {
		t.Errorf("quorum flags %q", got)
	}
	if got := FlagsText(&forever, t0, time.Minute); got != "NO-EXPIRY" {
		t.Errorf("no-expiry flags %q", got)
	}
	// A semaphore's key has no TTL by design: its permits free themselves, not the key.
	sem := scanner.Lock{Key: "s", NoExpiry: true, FetchedAt: t0, Shared: &scanner.Shared{Kind: scanner.KindSemaphore}}
	if NeverFrees(&sem) || FlagsText(&sem, t0, time.Minute) != "" || TTL(&sem, t0) != Unknown {
		t.Errorf("a semaphore without TTL flagged: %q, TTL %q", FlagsText(&sem, t0, time.Minute), TTL(&sem, t0))
	}
	psem := scanner.Lock{Key: "p", NoExpiry: true, FetchedAt: t0, Shared: &scanner.Shared{Kind: scanner.KindPermitSemaphore,
		Holders: []scanner.SharedHolder{{TTL: time.Minute}, {TTL: time.Hour, Expired: true}, {NoExpiry: true}, {TTL: 90 * time.Second}}}}
	if got := TTL(&psem, t0.Add(30*time.Second)); got != "1m00s" {
		t.Errorf("permit-expirable semaphore's TTL %q, want its last live permit's", got)
	}
	rows := []*scanner.Lock{&sem, &old, &forever}
	SortLocks(rows, SortByTTL, false)
	if byTTL := keys(rows); strings.Join(byTTL, ",") != "b,a,s" {
		t.Errorf("by TTL %v, want the lock without expiry first and the semaphore last", byTTL)
	}
}

// sortFixture has every kind of tie and unknown, read at different moments like a census.
func sortFixture() []*scanner.Lock {
	return []*scanner.Lock{
		{Key: "lock:e", Node: "", TTL: 30 * time.Second, FetchedAt: t0},
		{Key: "lock:d", Node: "api-1", NoExpiry: true, AcquiredAt: t0.Add(-time.Hour), FetchedAt: t0},
		{Key: "lock:c", Node: "api-2", TTL: 10 * time.Second, AcquiredAt: t0.Add(-time.Minute), FetchedAt: t0.Add(time.Second)},
		{Key: "lock:b", Node: "api-1", TTL: 11 * time.Second, AcquiredAt: t0.Add(-time.Minute), FetchedAt: t0},
		{Key: "lock:a", Node: "", TTL: 12 * time.Second, FetchedAt: t0},
	}
}

func keys(rows []*scanner.Lock) []string {
	var out []string
	for _, l := range rows {
		out = append(out, l.Key)
	}
	return out
}

func TestSortOrders(t *testing.T) {
	cases := map[Sort][]string{
		SortByKey: {"lock:a", "lock:b", "lock:c", "lock:d", "lock:e"},
		// d never expires: first (the risk). Deadlines: b t0+11s, c t0+1s+10s (a tie: by
		// key), a t0+12s, e t0+30s.
		SortByTTL:    {"lock:d", "lock:b", "lock:c", "lock:a", "lock:e"},
		SortByAge:    {"lock:d", "lock:b", "lock:c", "lock:a", "lock:e"},
		SortByHolder: {"lock:b", "lock:d", "lock:c", "lock:a", "lock:e"},
	}
	for s, want := range cases {
		rows := sortFixture()
		SortLocks(rows, s, false)
		if got := keys(rows); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
		SortLocks(rows, s, true)
		slices.Reverse(want)
		if got := keys(rows); !slices.Equal(got, want) {
			t.Errorf("%s reversed: %v, want %v", s, got, want)
		}
		if p, err := ParseSort(s.String()); err != nil || p != s {
			t.Errorf("ParseSort(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParseSort("size"); err == nil {
		t.Error("ParseSort accepted an unknown order")
	}
}

func TestSprintfEscapesOnceAndFailsClosed(t *testing.T) {
	cases := []struct {
		got  Safe
		want string
	}{
		// Go's errors quote with backslashes already: kept, the control character escaped.
		{Sprintf("%s", errors.New(`open C:\certs: "x`+"\x1b"+`"`)), `open C:\certs: "x\x1b"`},
		{Sprintf("value %s", Quote(`a"b\`+"\x1b", 0)), `value "a\"b\\\x1b"`},
		{Sprintf("%s", []byte("\x1b[2J")), `[27 91 50 74]`},
		{Sprintf("%v", []string{"\x1b"}), `[\x1b]`},
		{Sprintf("%d %v %s", 3, true, Safe("\t")), "3 true \t"},
	}
	for i, c := range cases {
		if string(c.got) != c.want {
			t.Errorf("case %d: %q, want %q", i, c.got, c.want)
		}
	}
}

func TestCountPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 locks", 1: "1 lock", 2: "2 locks", 1000: "1000 locks"} {
		if got := Count(n, "lock"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
