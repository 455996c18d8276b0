package protocol

import (
	"testing"
	"time"
)

func TestLeaseMemberRoundTrip(t *testing.T) {
	v := Value{Node: "api:7", Trace: "t|1", AcquiredAt: time.UnixMilli(1764489600123), Rand: "0123456789abcdef"}
	for _, mode := range []Mode{ModeRead, ModeWrite, ModePermit} {
		m := LeaseMember{Mode: mode, Op: "fedcba9876543210:42", Value: v}
		text := m.String()
		got, ok := ParseLeaseMember(text)
		if !ok || got != m {
			t.Errorf("ParseLeaseMember(%q) = %+v %v, want %+v", text, got, ok, m)
		}
	}
	if got := (LeaseMember{Mode: ModeRead, Op: "fedcba9876543210:1", Value: v}).String(); got != "r|fedcba9876543210:1|api%3A7:t|1:1764489600123:0123456789abcdef" {
		t.Errorf("String = %q", got)
	}
}

func TestParseLeaseMemberRejects(t *testing.T) {
	for _, s := range []string{
		"", "r", "r|", "x|fedcba9876543210:1|n:-:1:0123456789abcdef",
		"r|fedcba9876543210|n:-:1:0123456789abcdef",     // op without counter
		"r|FEDCBA9876543210:1|n:-:1:0123456789abcdef",   // upper-case client id
		"r|fedcba9876543210:1x|n:-:1:0123456789abcdef",  // counter not decimal
		"r|fedcba9876543210:1|n:-:1:0123456789abcdef:2", // a count: members are single levels
		"r|fedcba9876543210:1|not a value",              // no lock value
		"rr|fedcba9876543210:1|n:-:1:0123456789abcdef",  // mode is one byte
		"w:fedcba9876543210:1|n:-:1:0123456789abcdef",   // wrong separator
	} {
		if m, ok := ParseLeaseMember(s); ok {
			t.Errorf("ParseLeaseMember(%q) = %+v, want rejected", s, m)
		}
	}
}

// FuzzParseLeaseMember: whatever a zset under lock:* holds, parsing neither panics nor
// accepts what String would not write back the same.
func FuzzParseLeaseMember(f *testing.F) {
	f.Add("r|fedcba9876543210:1|api-7:-:1764489600123:0123456789abcdef")
	f.Add("p|0000000000000000:18446744073709551615|%3A:%2D:0:ffffffffffffffff")
	f.Add("w|fedcba9876543210:1|a|b:c|d:1:0123456789abcdef")
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := ParseLeaseMember(s)
		if !ok {
			return
		}
		again, ok := ParseLeaseMember(m.String())
		if !ok || again != m {
			t.Fatalf("%q parsed as %+v, which writes %q and reads back as %+v %v", s, m, m.String(), again, ok)
		}
	})
}
