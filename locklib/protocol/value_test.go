package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValueRoundTrip(t *testing.T) {
	at := time.UnixMilli(1764489600123)
	cases := []Value{
		{Node: "api-7", Trace: "", AcquiredAt: at, Rand: "0123456789abcdef"},
		{Node: "api-7", Trace: "4bf92f3577b34da6", AcquiredAt: at, Rand: "0123456789abcdef", Count: 3},
		{Node: "[::1]:8080", Trace: "a:b%c", AcquiredAt: at, Rand: "fedcba9876543210"},
		{Node: "", Trace: "-", AcquiredAt: at, Rand: "fedcba9876543210", Count: 1},
	}
	for _, want := range cases {
		s := want.String()
		if n := strings.Count(s, ":"); n != 3 && !(want.Count > 0 && n == 4) {
			t.Errorf("%q has %d separators", s, n)
		}
		got, err := ParseValue(s)
		if err != nil {
			t.Fatalf("ParseValue(%q): %v", s, err)
		}
		if !got.AcquiredAt.Equal(want.AcquiredAt) || got.Node != want.Node || got.Trace != want.Trace || got.Rand != want.Rand || got.Count != want.Count {
			t.Errorf("round trip of %+v gave %+v", want, got)
		}
	}
}

func TestParseValueForeignColons(t *testing.T) {
	// Written by other code in the same layout, node not escaped.
	v, err := ParseValue("2001:db8::1:-:1764489600123:0123456789abcdef:2")
	if err != nil {
		t.Fatal(err)
	}
	if v.Node != "2001:db8::1" || v.Trace != "" || v.Count != 2 {
		t.Fatalf("got %+v", v)
	}
}

func TestParseValueRejects(t *testing.T) {
	for _, s := range []string{"", "abc", "a:b:c", "n:t:notanumber:0123456789abcdef", "n:t:1:0123456789ABCDEF",
		"n:t:1:0123456789abcdef:0", "n:t:1:0123456789abcdef:01", "n%zz:t:1:0123456789abcdef", "n:t:-5:0123456789abcdef"} {
		if _, err := ParseValue(s); !errors.Is(err, ErrBadValue) {
			t.Errorf("ParseValue(%q) err = %v, want ErrBadValue", s, err)
		}
	}
}

func TestNewValueIsUnique(t *testing.T) {
	a, b := NewValue("n", "", time.Now()), NewValue("n", "", time.Now())
	if a.Rand == b.Rand || !isRand(a.Rand) {
		t.Fatalf("rand parts %q %q", a.Rand, b.Rand)
	}
}

func TestWithoutCount(t *testing.T) {
	for in, want := range map[string]string{
		"api-7:-:1764489600123:0123456789abcdef":         "api-7:-:1764489600123:0123456789abcdef",
		"api-7:-:1764489600123:0123456789abcdef:12":      "api-7:-:1764489600123:0123456789abcdef",
		"2001:db8::1:-:1764489600123:0123456789abcdef:2": "2001:db8::1:-:1764489600123:0123456789abcdef",
		"n:t:1:0123456789abcdef:01":                      "n:t:1:0123456789abcdef:01", // no count: not this format
		"redsync-value:3":                                "redsync-value:3",
		"plain":                                          "plain",
	} {
		if got := WithoutCount(in); got != want {
			t.Errorf("WithoutCount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseValueAllocatesNothing: the census decodes every value it reads with ParseValue,
// lockscope's or not; without a %XX escape that costs no garbage.
func TestParseValueAllocatesNothing(t *testing.T) {
	for _, s := range []string{
		"worker-3:-:1764400000123:00000000000000ff",
		"host:6379:req-1:1764400000123:00000000000000ff:4",
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8", // rejected: not locklib's
		"n:t:notanumber:0123456789abcdef",
		"n:t:1:0123456789abcdef:01",
		"n:t:1:0123456789abcdef:99999999999999999999", // a count past MaxInt: rejected
	} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseValue(s) }); n != 0 {
			t.Errorf("ParseValue(%q): %v allocations", s, n)
		}
	}
}

// FuzzParseValue: ParseValue decodes untrusted bytes (any key the census reads). Whatever it
// accepts is well-formed and survives a round trip; whatever it rejects is ErrBadValue.
func FuzzParseValue(f *testing.F) {
	for _, seed := range []string{
		"api-7:-:1764489600123:0123456789abcdef",
		"api-7:t%3A1:1764489600123:0123456789abcdef:4",
		"::::::",
		"worker-3:req-9:1764400000123:00000000000000ff:2",
		"fe80::1:6379:-:1764400000123:0123456789abcdef",
		"n:-:1764400000123:0123456789abcdef:01",
		"n:t:+17:0123456789abcdef",
		"n%3Ax:t%25:17:0123456789abcdef:3",
		":::0123456789abcdef",
		"0123456789abcdef:0123456789abcdef:1:0123456789abcdef:1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseValue(s)
		if err != nil {
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("%q: error %v is not ErrBadValue", s, err)
			}
			return
		}
		if !isRand(v.Rand) || v.Count < 0 || v.AcquiredAt.UnixMilli() < 0 {
			t.Fatalf("%q accepted as %+v", s, v)
		}
		if !strings.Contains(s, "%") && (!strings.HasPrefix(s, v.Node+":") || !strings.Contains(s, v.Rand)) {
			t.Fatalf("%q: node %q, rand %q are not its fields", s, v.Node, v.Rand)
		}
		// Its holder without the count is the same value with count 0.
		if base, err := ParseValue(WithoutCount(s)); err != nil || base.Count != 0 || base.Node != v.Node ||
			base.Trace != v.Trace || base.Rand != v.Rand || !base.AcquiredAt.Equal(v.AcquiredAt) {
			t.Fatalf("%q: WithoutCount %q decodes to %+v, %v", s, WithoutCount(s), base, err)
		}
		// Whatever decodes must re-encode to something that decodes to the same value.
		again, err := ParseValue(v.String())
		if err != nil {
			t.Fatalf("re-encoded %q of %q does not parse: %v", v.String(), s, err)
		}
		if again.Node != v.Node || again.Trace != v.Trace || again.Count != v.Count || again.Rand != v.Rand || !again.AcquiredAt.Equal(v.AcquiredAt) {
			t.Fatalf("%q: %+v then %+v", s, v, again)
		}
	})
}

func TestAroundStamp(t *testing.T) {
	for _, v := range []Value{
		{Node: "web-1", AcquiredAt: time.UnixMilli(1764563000000), Rand: "0123456789abcdef"},
		{Node: "a:b%", Trace: "t:1", AcquiredAt: time.UnixMilli(5), Rand: "0123456789abcdef", Count: 12},
	} {
		before, after, ok := AroundStamp(v.String())
		stamped := v
		stamped.AcquiredAt = time.UnixMilli(1999999999999)
		if !ok || before+"1999999999999"+after != stamped.String() {
			t.Errorf("AroundStamp(%q) = %q, %q, %v", v.String(), before, after, ok)
		}
	}
	for _, bad := range []string{"", "x", "a:b:c", "n:-:5:notrand"} {
		if _, _, ok := AroundStamp(bad); ok {
			t.Errorf("AroundStamp(%q) ok", bad)
		}
	}
}
