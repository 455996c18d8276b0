package locklib

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// instanceHealth counts, per instance, its calls that failed in a row: an instance is known
// down after a connection failure (refused, reset, closed), or after downAfterTimeouts
// timeouts in a row (a killed instance often only times out: go-redis keeps redialing it past
// the deadline), and up again after any answer. A silent instance that is known down counts
// as failed; a single timeout only means slow: on a loaded host every instance is at times.
type instanceHealth []atomic.Int32

const downAfterTimeouts = 3

func (h instanceHealth) note(i int, err error) {
	switch {
	case isConnectionFailure(err):
		h[i].Store(downAfterTimeouts)
	case err != nil && isTimeout(err):
		if h[i].Load() < downAfterTimeouts { // racy, harmlessly: it only has to reach the bar
			h[i].Add(1)
		}
	default: // an answer, even an error reply: the server is up
		h[i].Store(0)
	}
}

// isConnectionFailure reports whether err means the instance could not be reached at all:
// neither an error reply from a live server (WRONGTYPE, NOSCRIPT...) nor a timeout.
func isConnectionFailure(err error) bool {
	var reply redis.Error
	return err != nil && !errors.As(err, &reply) && !isTimeout(err)
}

// isTimeout reports whether err is a deadline or timeout: the instance may just be slow.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

func (h instanceHealth) isDown(i int) bool { return h[i].Load() >= downAfterTimeouts }

// onlyDownLeft reports whether every instance that has not answered is known to be down, so
// that waiting for them until the timeout would only delay the outcome (a split vote with an
// instance dead would otherwise cost every attempt the full instance timeout).
func (s *redlockStore) onlyDownLeft(answered func(i int) bool) bool {
	for i := range s.clients {
		if !answered(i) && !s.health.isDown(i) {
			return false
		}
	}
	return true
}
