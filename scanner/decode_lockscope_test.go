package scanner

import "testing"

// TestDecodeLockscopeAllocatesNothing: decoding a census's values costs no garbage, whether
// they are locklib's or another library's that the lockscope decoder rejects first.
func TestDecodeLockscopeAllocatesNothing(t *testing.T) {
	values := map[string]Format{
		"worker-3:-:1764400000123:00000000000000ff":        FormatLockscope,
		"host:6379:req-1:1764400000123:00000000000000ff:4": FormatLockscope,
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8":             FormatUUID,
	}
	for v, want := range values {
		var l Lock
		if n := testing.AllocsPerRun(100, func() { decodeString(&l, v) }); n != 0 || l.Format != want {
			t.Errorf("%q: %v allocations, format %q, want %q", v, n, l.Format, want)
		}
	}
}
