package locklib

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

	// ErrNotReplicated: fewer replicas than WithReplicas asked for confirmed an acquisition or
	// a renewal in time. The error is a *ReplicationError; an Obtain's is ErrNotObtained too.
	ErrNotReplicated = errors.New("locklib: not replicated")

	// ErrInvalid: a bad argument (empty key, ttl below 1 ms, Reentrant without an owner, a
	// key that cannot be locked in Redis Cluster, a bad NewRedlock option, WithReplicas
	// where WAIT cannot work, a kind of lock the store does not keep; ErrUpgrade).
	ErrInvalid = errors.New("locklib: invalid argument")
)

// ReplicationError is the error of an acquisition or renewal that fewer replicas than
// WithReplicas asked for confirmed within its timeout: errors.Is(err, ErrNotReplicated).
type ReplicationError struct {
	Key     string
	Acked   int // replicas that confirmed (WAIT's answer)
	Wanted  int
	Timeout time.Duration
}

func (e *ReplicationError) Error() string {
	return fmt.Sprintf("%v: %q: %d of %d replicas confirmed the write within %v", ErrNotReplicated, e.Key, e.Acked, e.Wanted, e.Timeout)
}

// Is makes errors.Is(err, ErrNotReplicated) hold.
func (e *ReplicationError) Is(target error) bool { return target == ErrNotReplicated }

// backendError wraps err so that errors.Is(err, ErrBackend) holds, unless it already does
// or it is one of locklib's own errors.
func backendError(op, key string, err error) error {
	if err == nil || errors.Is(err, ErrBackend) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotHeld) ||
		errors.Is(err, ErrNotObtained) || errors.Is(err, ErrNotReplicated) {
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
