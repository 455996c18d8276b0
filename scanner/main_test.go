package scanner

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (Watch, hint
// subscriptions, the pass's readers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
