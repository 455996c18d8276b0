package present

import (
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// TestHolderText: the HOLDER cell of each kind of shared primitive: a writer holding read
// levels too (a downgrade) is one holder, the writer; expired holders hold nothing; a
// semaphore shows its permits, or what is available when holders are not recorded.
func TestHolderText(t *testing.T) {
	rw := func(holders ...scanner.SharedHolder) *scanner.Lock {
		return &scanner.Lock{Shared: &scanner.Shared{Kind: scanner.KindRWLock, Holders: holders}}
	}
	read, write := protocol.ModeRead, protocol.ModeWrite
	for _, tc := range []struct {
		l    *scanner.Lock
		want string
	}{
		{&scanner.Lock{Node: "api-1"}, "api-1"},
		{&scanner.Lock{}, Unknown},
		{rw(scanner.SharedHolder{ID: "a", Mode: write, Node: "api-4"}, scanner.SharedHolder{ID: "a", Mode: read, Node: "api-4"}), "api-4 (write)"},
		{rw(scanner.SharedHolder{ID: "a", Mode: read}, scanner.SharedHolder{ID: "b", Mode: read}, scanner.SharedHolder{ID: "c", Mode: read, Expired: true}), "2 readers"},
		{rw(scanner.SharedHolder{ID: "u:65", Mode: read}, scanner.SharedHolder{ID: "c", Mode: read, Expired: true}), "u:65 (read)"},
		{rw(scanner.SharedHolder{ID: "c", Mode: write, Expired: true}), Unknown},
		{&scanner.Lock{Shared: &scanner.Shared{Kind: scanner.KindSemaphore, InUse: 2, Limit: 5, HasLimit: true}}, "2/5 permits"},
		{&scanner.Lock{Shared: &scanner.Shared{Kind: scanner.KindSemaphore, InUse: 1}}, "1 permit"},
		{&scanner.Lock{Shared: &scanner.Shared{Kind: scanner.KindSemaphore, HoldersUnknown: true, Available: 3, HasAvailable: true}}, "3 available"},
	} {
		if got := HolderText(tc.l); got != tc.want {
			t.Errorf("HolderText(%+v) = %q, want %q", tc.l.Shared, got, tc.want)
		}
	}
}

// TestHolderTTL: a holder's own TTL counts down from the read; an expired one and a permit
// without a lease say so.
func TestHolderTTL(t *testing.T) {
	l := &scanner.Lock{FetchedAt: t0}
	for _, tc := range []struct {
		h    scanner.SharedHolder
		want string
	}{
		{scanner.SharedHolder{TTL: 10 * time.Second}, "7.0s"},
		{scanner.SharedHolder{TTL: 2 * time.Second}, Expired},
		{scanner.SharedHolder{Expired: true}, Expired},
		{scanner.SharedHolder{NoExpiry: true}, Never},
	} {
		if got := HolderTTL(l, tc.h, t0.Add(3*time.Second)); got != tc.want {
			t.Errorf("HolderTTL(%+v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}
