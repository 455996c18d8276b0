package demo

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// heldLock is what a critical section needs of its lock: a *locklib.Lock, or a naiveLock.
type heldLock interface {
	Token() int64 // fencing token; 0 when the lock has none
	Value() string
	Lost() <-chan struct{} // closed when the holder learns the lock is gone
	Err() error            // why it was lost
	Release(ctx context.Context) error
}

// locker takes locks for one worker incarnation: locklib, or the naive lock.
type locker interface {
	obtain(ctx context.Context, key string, ttl time.Duration, trace string) (heldLock, error)
	close()
}

// libLocker is locklib as the demo uses it: the watchdog on, capped at maxHold.
type libLocker struct {
	client  *locklib.Client
	maxHold time.Duration
}

func (l libLocker) obtain(ctx context.Context, key string, ttl time.Duration, trace string) (heldLock, error) {
	lock, err := l.client.Obtain(ctx, key, ttl, locklib.WithTrace(trace), locklib.WithWatchdog(), locklib.WithMaxHold(l.maxHold))
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return lock, nil
}

func (l libLocker) close() { _ = l.client.Close() }

// naiveLocker is the lock the design documents warn about, written the way it is found in
// the wild: every mistake below is one locklib exists to avoid.
//
//   - SETNX, then EXPIRE in a second command: a crash between them leaves a key with no TTL,
//     held forever (locklib: SET NX PX in one script).
//   - Release is a DEL that does not check the owner: a holder whose lock expired deletes the
//     next holder's lock (locklib: compare-and-delete).
//   - Renewal is GET, then EXPIRE: between the two the lock can expire and pass to another
//     holder, whose lock the EXPIRE then extends (locklib: one compare-and-extend script).
//   - No fencing token: the resource cannot tell a stale holder's write from the current one's.
type naiveLocker struct {
	rdb  redis.UniversalClient
	node string
	// acquired is called between SETNX and EXPIRE: it records the value the key now holds and
	// is where the crash scenario strikes.
	acquired func(key, value string)
}

// naiveRetry is how often a waiting naive worker tries SETNX again, in TTLs: polling, no queue.
const naiveRetryTTLs = 0.05

func (n *naiveLocker) obtain(ctx context.Context, key string, ttl time.Duration, trace string) (heldLock, error) {
	value := protocol.NewValue(n.node, trace, time.Now()).String()
	for {
		ok, err := n.rdb.SetNX(ctx, key, value, 0).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			n.acquired(key, value)
			if err := n.rdb.Expire(ctx, key, ttl).Err(); err != nil {
				return nil, err // the key stays, without a TTL
			}
			return n.hold(key, value, ttl), nil
		}
		if !sleepCtx(ctx, ttls(ttl, naiveRetryTTLs)) {
			return nil, ctx.Err()
		}
	}
}

func (n *naiveLocker) close() {}

// errNaiveLost is why a naive lock was lost: its renewal found another value in the key.
var errNaiveLost = errors.New("naive lock: the key holds another value")

// naiveLock is one naive lock held, renewed every third of its TTL until Release.
type naiveLock struct {
	locker *naiveLocker
	key    string
	value  string

	stop    context.CancelFunc
	renewed sync.WaitGroup
	lost    chan struct{}
	err     error // set before lost closes
}

func (n *naiveLocker) hold(key, value string, ttl time.Duration) *naiveLock {
	ctx, stop := context.WithCancel(context.Background())
	l := &naiveLock{locker: n, key: key, value: value, stop: stop, lost: make(chan struct{})}
	l.renewed.Go(func() { l.renew(ctx, ttl) })
	return l
}

func (l *naiveLock) renew(ctx context.Context, ttl time.Duration) {
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v, err := l.locker.rdb.Get(ctx, l.key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			continue // a crashed or cut-off holder: nothing reaches Redis, try again
		}
		if v != l.value {
			l.err = errNaiveLost
			close(l.lost)
			return
		}
		// The check and the extension are two commands: the key may change hands in between.
		_ = l.locker.rdb.Expire(ctx, l.key, ttl).Err()
	}
}

func (l *naiveLock) Token() int64          { return 0 }
func (l *naiveLock) Value() string         { return l.value }
func (l *naiveLock) Lost() <-chan struct{} { return l.lost }

func (l *naiveLock) Err() error {
	select {
	case <-l.lost:
		return l.err
	default:
		return nil
	}
}

// Release stops the renewal and deletes the key, whoever holds it now.
func (l *naiveLock) Release(ctx context.Context) error {
	l.stop()
	l.renewed.Wait()
	return l.locker.rdb.Del(ctx, l.key).Err()
}
