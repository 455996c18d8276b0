package libmetrics

import (
	"context"
	"fmt"
	"testing"

	"github.com/lockscope/lockscope/locklib"
)

// TestReason checks the bounded reason of every error locklib gives the observer, as
// locklib wraps them.
func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("%w: %q is held", locklib.ErrNotObtained, "k"), "taken"},
		{fmt.Errorf("%w: %q: %w", locklib.ErrNotObtained, "k", context.DeadlineExceeded), "context"},
		{fmt.Errorf("%w: %q: %w", locklib.ErrNotObtained, "k", context.Canceled), "context"},
		{fmt.Errorf("%w: refresh %q: %w", locklib.ErrBackend, "k", context.DeadlineExceeded), "backend"},
		{fmt.Errorf("%w: %w", locklib.ErrNotObtained, &locklib.ReplicationError{Key: "k"}), "not_replicated"},
		{&locklib.ReplicationError{Key: "k"}, "not_replicated"},
		{fmt.Errorf("%w: empty key", locklib.ErrInvalid), "invalid"},
		{fmt.Errorf("%w: %w", locklib.ErrLost, locklib.ErrNotHeld), "not_held"},
		{fmt.Errorf("%w: %q: %w", locklib.ErrLost, "k", locklib.ErrValidityPassed), "validity_passed"},
		{fmt.Errorf("%w: %q was released", locklib.ErrNotHeld, "k"), "not_held"},
		{fmt.Errorf("something else"), "other"},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestNamerDefault checks the default name: the key's keygroup.Default group, never the key.
func TestNamerDefault(t *testing.T) {
	n := NewNamer(nil, 0)
	for key, want := range map[string]string{"lock:orders:42": "orders", "orders": "_", "lock:jobs:a:b": "jobs"} {
		if got := n.Name(key); got != want {
			t.Errorf("Name(%q) = %q, want %q", key, got, want)
		}
	}
}
