package locklib

import (
	"errors"
	"fmt"
	"strings"
)

// The errors locklib returns; test them with errors.Is. They stay distinct: a lock that is
// taken is not a backend failure, and a context that ended is reported as such.
var (
	// ErrNotObtained: the lock is held by someone else (TryObtain), or Obtain's context ended
	// first (then the error wraps ctx.Err() too, so errors.Is(err, context.DeadlineExceeded)
	// holds as well).
	ErrNotObtained = errors.New("locklib: lock not obtained")

	// ErrNotHeld: Release, Refresh or a renewal found the key gone or holding another value.
	ErrNotHeld = errors.New("locklib: lock not held")

	// ErrLost is what Lock.Err returns once Lost() is closed; it wraps the reason
	// (ErrNotHeld when a renewal was refused, ErrValidityPassed otherwise).
	ErrLost = errors.New("locklib: lock lost")

	// ErrValidityPassed: the lock's local validity deadline passed without a confirmed
	// renewal (no watchdog, watchdog capped, or Redis unreachable). The key may still
	// exist, but this holder can no longer rely on it.
	ErrValidityPassed = errors.New("locklib: validity deadline passed without a confirmed renewal")

	// ErrBackend wraps every Redis or network error; the underlying error stays reachable
	// with errors.Is / errors.As.
	ErrBackend = errors.New("locklib: backend error")

	// ErrInvalid: a bad argument (empty key, ttl below 1 ms, Reentrant without an owner, a
	// key that cannot be locked in Redis Cluster, a bad NewRedlock option).
	ErrInvalid = errors.New("locklib: invalid argument")
)

// backendError wraps err so that errors.Is(err, ErrBackend) holds, unless it already does
// or it is one of locklib's own errors.
func backendError(op, key string, err error) error {
	if err == nil || errors.Is(err, ErrBackend) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotHeld) {
		return err
	}
	return fmt.Errorf("%w: %s %q: %w", ErrBackend, op, key, err)
}

// joinOneLine is errors.Join on one line: every error locklib returns is one line that
// names its key, and errors.Is and errors.As still find each of errs.
func joinOneLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return oneLineErrors(errs)
}

type oneLineErrors []error

func (e oneLineErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e oneLineErrors) Unwrap() []error { return e }
