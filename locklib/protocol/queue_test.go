package protocol

import (
	"strings"
	"testing"
)

// Queue entries come back from Redis in release replies; anything may be there.
func FuzzParseQueueEntry(f *testing.F) {
	f.Add("0123456789abcdef:1|30000|api-7:-:1764489600123:0123456789abcdef")
	f.Add("||")
	f.Add("a:1|-5|v|w")
	f.Fuzz(func(t *testing.T, entry string) {
		id, ttl, value, ok := ParseQueueEntry(entry)
		if !ok {
			return
		}
		if ttl < 0 || strings.Contains(id, "|") {
			t.Fatalf("%q decoded to id %q, ttl %v", entry, id, ttl)
		}
		again := QueueEntry(id, ttl, value)
		if id2, ttl2, value2, ok := ParseQueueEntry(again); !ok || id2 != id || ttl2 != ttl || value2 != value {
			t.Fatalf("%q -> (%q, %v, %q) -> %q does not round-trip", entry, id, ttl, value, again)
		}
	})
}
