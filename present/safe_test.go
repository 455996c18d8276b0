package present

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lockscope/lockscope/scanner"
)

func TestSafeText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 0, "plain"},
		{"tab\there", 0, `tab\there`},
		{`back\slash`, 0, `back\\slash`},
		{"\x00\x7f\x1b", 0, `\x00\x7f\x1b`},
		{"caf\xc3\xa9", 0, "café"},
		{"bad\xff", 0, `bad\xff`},
		{"zero\u200bwidth", 0, `zero\u200bwidth`},
		{"abcdefghij", 4, "abcd…(+6 bytes)"},
		{"ab\ncd", 3, `ab…(+3 bytes)`},
		{"short", 10, "short"},
	}
	for _, tc := range tests {
		if got := SafeText(tc.in, tc.max); got != tc.want {
			t.Errorf("SafeText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// FuzzSafeText: the output is valid UTF-8 with no control characters, and a cut output stays
// within max runes plus the marker.
func FuzzSafeText(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string, max int) {
		max %= 1 << 16
		out := SafeText(v, max)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q: %q", v, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character %U left in %q", r, out)
			}
		}
		if max > 0 {
			body, _, cut := strings.Cut(out, "…(+")
			if cut && utf8.RuneCountInString(body) > max {
				t.Fatalf("cut output %q longer than %d runes", out, max)
			}
		}
	})
}

func TestValue(t *testing.T) {
	binary := scanner.Lock{Value: "\x00\xff\x1b[31mred\n\x80"}
	if d := Value(&binary, 0); d != `\x00\xff\x1b[31mred\n\x80` {
		t.Errorf("binary value shown as %q", d)
	}
	huge := scanner.Lock{Value: strings.Repeat("x", scanner.ValueCap), Truncated: true}
	if d := Value(&huge, 80); !strings.HasSuffix(d, " bytes)") || !strings.Contains(d, "…(+") {
		t.Errorf("huge value cut without a marker: %q", d)
	}
	if d := Value(&huge, 0); !strings.HasSuffix(d, "…(truncated at 4096 bytes)") {
		t.Errorf("a value read only in part does not say so: …%q", d[len(d)-40:])
	}
}

func TestSprintfEscapesEveryStringArgument(t *testing.T) {
	evil := "lock:\x1b[2Jevil\n"
	got := Sprintf("released %s (value %q) by %s, %d", evil, Cut{Text: "v\x07" + strings.Repeat("y", 20), Max: 6}, Safe(`a\b`), 42)
	want := Safe(`released lock:\x1b[2Jevil\n (value "v\\x07y…(+19 bytes)") by a\b, 42`)
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.ContainsAny(string(got), "\x1b\x07\n") {
		t.Errorf("a control character got through: %q", got)
	}
}

func TestUnescapeTakesBackWhatEscapePrints(t *testing.T) {
	for _, raw := range []string{"plain", "lock:bin:\xff\xfe", "nul\x00byte", `back\slash`, "caf\xc3\xa9", "zero\u200bwidth",
		"\x1b[2J\n\t\r", "astral\U000e0001", `quote"d`, ""} {
		printed := Escape(raw)
		got, err := Unescape(printed)
		if err != nil || got != raw {
			t.Errorf("Unescape(Escape(%q)) = %q, %v", raw, got, err)
		}
	}
	if got, err := Unescape(`say \"hi\"`); err != nil || got != `say "hi"` { // Quote's form
		t.Errorf(`Unescape of \" = %q, %v`, got, err)
	}
	for _, bad := range []string{`tail\`, `\q`, `\x4`, `\xzz`, `\u12`, `\UFFFFFFFF`, `\x+1`, `\ud800`} {
		if got, err := Unescape(bad); err == nil {
			t.Errorf("Unescape(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzEscape: Escape is reversible and its output is printable on a terminal.
func FuzzEscape(f *testing.F) {
	f.Add("lock:bin:\xff\xfe")
	f.Add("\x00\\\x1b[31m\u200b\U000e0001")
	f.Fuzz(func(t *testing.T, raw string) {
		printed := Escape(raw)
		if back, err := Unescape(printed); err != nil || back != raw {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", raw, back, err)
		}
		if !utf8.ValidString(printed) {
			t.Fatalf("invalid UTF-8 out of %q: %q", raw, printed)
		}
		for _, r := range printed {
			if !unicode.IsPrint(r) {
				t.Fatalf("non-printable %U left in %q", r, printed)
			}
		}
	})
}

// TestEscapeOfPlainTextDoesNotAllocate: ls --json escapes every key and value; the common
// all-ASCII one must cost no allocation.
func TestEscapeOfPlainTextDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Escape("lock:orders:42") }); n != 0 {
		t.Errorf("Escape of plain text allocates %v times", n)
	}
}
