package redistest

import (
	"testing"
	"time"
)

// Eventually retries cond every 5 ms for up to 10 s and fails the test with what when it
// never holds: for state that other processes or goroutines reach a moment later (a
// subscription made, a queue entry written, a late answer applied).
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
