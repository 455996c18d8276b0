package protocol

import "testing"

func TestCompanionKeys(t *testing.T) {
	cases := map[string]string{
		"lock:order:1001":   "fence:{lock:order:1001}",
		"lock:{order}:1001": "fence:lock:{order}:1001",
		"lock:{}:x":         "fence:{lock:{}:x}",
	}
	for key, want := range cases {
		if got := FenceKey(key); got != want {
			t.Errorf("FenceKey(%q) = %q, want %q", key, got, want)
		}
	}
	if got := WaitQueueKey("lock:a"); got != "waitq:{lock:a}" {
		t.Errorf("WaitQueueKey = %q", got)
	}
}

func TestCompanionsInSlot(t *testing.T) {
	for key, want := range map[string]bool{
		"lock:order:1001": true, "lock:{order}:1001": true, "lock:a{b": true,
		"lock:a}b": false, "lock:{}:x}": false,
	} {
		if got := CompanionsInSlot(key); got != want {
			t.Errorf("CompanionsInSlot(%q) = %v, want %v", key, got, want)
		}
	}
}
