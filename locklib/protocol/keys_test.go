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
	for _, key := range []string{"lock:order:1001", "lock:{order}:1001", "lock:{}:x", ""} {
		want := [Ended]string{FenceKey(key), WaitQueueKey(key), WaitPresenceKey(key), LevelsKey(key), EndedKey(key)}
		if got := CompanionKeys(key); got != want {
			t.Errorf("CompanionKeys(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestLockKeyOf: LockKeyOf inverts every companion naming, with the hash-tag rule both ways,
// and names no lock for anything else.
func TestLockKeyOf(t *testing.T) {
	names := map[Companion]func(string) string{
		Fence: FenceKey, WaitQueue: WaitQueueKey, WaitPresence: WaitPresenceKey, Levels: LevelsKey, Ended: EndedKey,
		Limit: LimitKey,
	}
	for _, lock := range []string{"lock:a", "lock:{order}:1001", "lock:x}y", "lock:{", "lock:{}:x", "lock:", "", "{a}b", "fence:{lock:a}"} {
		for want, name := range names {
			companion := name(lock)
			if got, kind, ok := LockKeyOf(companion); !ok || got != lock || kind != want {
				t.Errorf("LockKeyOf(%q) = %q %v %v, want %q %v", companion, got, kind, ok, lock, want)
			}
		}
	}
	// The one ambiguity: a lock key that is a whole hash tag shares its companions with the
	// key inside the tag; LockKeyOf names the inner one.
	if got, _, _ := LockKeyOf(FenceKey("{lock:a}")); got != "lock:a" {
		t.Errorf("LockKeyOf(%q) = %q, want lock:a", FenceKey("{lock:a}"), got)
	}
	for _, k := range []string{"lock:a", "fence:", "fence:{lock:a", "waitq:lock:a", "Fence:{lock:a}", "waitqueue:{lock:a}"} {
		if lock, kind, ok := LockKeyOf(k); ok {
			t.Errorf("LockKeyOf(%q) = %q %v, want no lock", k, lock, kind)
		}
	}
	// Odd keys that are companions: whatever LockKeyOf names has k as its companion.
	for _, k := range []string{"fence:{lock:{t}:1}", "fence:{}", "waitp:{{}}", "ended:{a}{b}", "levels:}{a}"} {
		lock, kind, ok := LockKeyOf(k)
		if !ok || names[kind](lock) != k {
			t.Errorf("LockKeyOf(%q) = %q %v %v, whose companion is not the key", k, lock, kind, ok)
		}
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

// FuzzLockKeyOf: LockKeyOf reads keys a SCAN returned. Whatever lock it names has the key as
// its companion, and every companion of any lock key is recognized as one.
func FuzzLockKeyOf(f *testing.F) {
	for _, seed := range []string{"fence:{lock:a}", "waitq:lock:{order}:1", "ended:{}", "levels:{{}}", "lock:a"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if lock, kind, ok := LockKeyOf(k); ok && companionKey(kind, lock) != k {
			t.Fatalf("LockKeyOf(%q) = %q %v, whose companion is %q", k, lock, kind, companionKey(kind, lock))
		}
		companion := WaitPresenceKey(k)
		if lock, kind, ok := LockKeyOf(companion); !ok || kind != WaitPresence || WaitPresenceKey(lock) != companion {
			t.Fatalf("LockKeyOf(%q) = %q %v %v, want a lock whose WaitPresenceKey it is", companion, lock, kind, ok)
		}
	})
}
