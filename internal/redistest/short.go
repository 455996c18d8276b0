package redistest

import "testing"

// Slow skips a test under `go test -short` (make short, the inner loop): end-to-end runs
// through tmux, whole demo scenarios, clusters started and killed, and tests that wait out
// server timeouts. `make test` runs them all.
func Slow(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("slow: skipped with -short")
	}
}
