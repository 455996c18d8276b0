package scanner

import (
	"testing"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// FuzzLockscopeMatchesLocklib: the census's allocation-free decoder accepts exactly what
// protocol.ParseValue accepts and decodes the same node, trace, time and count.
func FuzzLockscopeMatchesLocklib(f *testing.F) {
	for _, seed := range []string{
		"worker-3:-:1764400000123:00000000000000ff",
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
	f.Fuzz(func(t *testing.T, v string) {
		var l Lock
		ok := decodeLockscope(&l, v)
		want, err := protocol.ParseValue(v)
		if ok != (err == nil) {
			t.Fatalf("%q: decoder ok=%v, protocol.ParseValue err=%v", v, ok, err)
		}
		if ok && (l.Node != want.Node || l.Trace != want.Trace || !l.AcquiredAt.Equal(want.AcquiredAt) || l.Reentry != want.Count) {
			t.Fatalf("%q: decoded %q %q %v %d, locklib %q %q %v %d", v, l.Node, l.Trace, l.AcquiredAt, l.Reentry,
				want.Node, want.Trace, want.AcquiredAt, want.Count)
		}
	})
}

// TestDecodeLockscopeAllocatesNothing: decoding a census's values costs no garbage.
func TestDecodeLockscopeAllocatesNothing(t *testing.T) {
	values := []string{"worker-3:-:1764400000123:00000000000000ff", "host:6379:req-1:1764400000123:00000000000000ff:4"}
	for _, v := range values {
		var l Lock
		if n := testing.AllocsPerRun(100, func() { decodeString(&l, v) }); n != 0 || l.Format != FormatLockscope {
			t.Errorf("%q: %v allocations, format %q", v, n, l.Format)
		}
	}
}
