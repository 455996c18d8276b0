package scanner

import (
	"testing"
	"time"
)

// TestClocksNow: a record is aged on its server's clock; a Redlock record on the median of its
// instances' clocks; a server never read on the local clock.
func TestClocksNow(t *testing.T) {
	local := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := Clocks{"a": {Addr: "a", Ahead: time.Hour}, "b": {Addr: "b", Ahead: -time.Minute}, "c": {Addr: "c", Ahead: time.Second}}
	for _, tc := range []struct {
		name string
		l    Lock
		want time.Time
	}{
		{"its server", Lock{Addr: "a"}, local.Add(time.Hour)},
		{"a server never read", Lock{Addr: "z"}, local},
		{"redlock: the median", Lock{Quorum: &Quorum{Instances: []Instance{{Addr: "a"}, {Addr: "b"}, {Addr: "c"}}}}, local.Add(time.Second)},
		{"redlock: none read", Lock{Quorum: &Quorum{Instances: []Instance{{Addr: "y"}}}}, local},
	} {
		if got := c.Now(&tc.l, local); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
