package protocol

import "testing"

// TestSlot checks Slot against slots that Redis Cluster's specification and CLUSTER KEYSLOT
// give, with and without hash tags, and that a key's companions share its slot.
func TestSlot(t *testing.T) {
	cases := map[string]int{
		"123456789":              12739, // the CRC16 check value 0x31C3 (cluster spec)
		"foo":                    12182,
		"{user1000}.following":   3443,
		"{user1000}.followers":   3443,
		"user1000":               3443,
		"foo{}{bar}":             Slot("foo{}{bar}"), // "{}" is no tag: the whole key
		"foo{{bar}}zap":          Slot("{bar"),
		"foo{bar}{zap}":          Slot("bar"),
		"lock:{order-1001}:pay":  Slot("order-1001"),
		"lock:{order-1001}:ship": Slot("order-1001"),
	}
	for key, want := range cases {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if HashTag("foo{}{bar}") != "foo{}{bar}" || HashTag("a{b}c") != "b" || HashTag("{a") != "{a" {
		t.Errorf("HashTag: %q %q %q", HashTag("foo{}{bar}"), HashTag("a{b}c"), HashTag("{a"))
	}
	// CompanionsInSlot tells the truth: lock:{}:x has no tag and a '}', so its wrapped
	// companions hash "lock:{" (docs/value-format.md's edge case).
	for _, key := range []string{"lock:order:1001", "lock:{order}:1001", "lock:{}:x", "lock:a}b"} {
		for _, c := range CompanionKeys(key) {
			if same := Slot(c) == Slot(key); same != CompanionsInSlot(key) {
				t.Errorf("companion %q in slot %d, its key %q in %d; CompanionsInSlot says %v", c, Slot(c), key, Slot(key), CompanionsInSlot(key))
			}
		}
	}
}
