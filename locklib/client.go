package locklib

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// Client obtains locks. It holds what is the same for every backend (options, waiting,
// back-off, the watchdog, Lost(), events, the observer); storage goes through a store.
// A Client is safe for concurrent use; Close it to stop its shared subscription.
type Client struct {
	store  store
	cfg    config
	id     string   // 16 hex chars; operation ids are "<id>:<n>" so wake-ups find this client
	secret [32]byte // derives re-entrant owners' value identity (see ownerRand)
	seq    atomic.Uint64
}

// New returns a Client for locks on one Redis server or cluster (rdb is not closed by Close).
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	s := newSingleStore(rdb)
	c := newClient(s, opts)
	s.setup(c.cfg, c.id)
	return c
}

// newClient is the constructor shared by every backend (New, NewRedlock).
func newClient[O RedlockOption](s store, opts []O) *Client {
	c := &Client{store: s, cfg: newConfig(opts)}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic("locklib: crypto/rand failed: " + err.Error())
	}
	c.id = hex.EncodeToString(id[:])
	if _, err := rand.Read(c.secret[:]); err != nil {
		panic("locklib: crypto/rand failed: " + err.Error())
	}
	return c
}

// Close stops the client's shared wake-up subscription, and waits for the requests still
// running in the background (a clean-up, or a call whose caller's context ended first: each
// is bounded by the go-redis client's ReadTimeout). Locks already held keep working
// (Release, Refresh, watchdog); an Obtain after Close still works but waits by polling only.
func (c *Client) Close() error { return c.store.close() }

// newValue makes the value for an acquisition. A re-entrant lock gets a random part derived
// from (client secret, owner, key), so the owner's next Obtain recognizes the stored value
// as its own without any client-side state; nobody without the secret can forge it.
func (c *Client) newValue(key string, lc lockConfig) protocol.Value {
	v := protocol.NewValue(c.cfg.node, lc.trace, time.Now())
	if lc.reentrant {
		v.Count = 1
		v.Rand = c.ownerRand(lc.owner, key)
	}
	return v
}

func (c *Client) ownerRand(owner, key string) string {
	m := hmac.New(sha256.New, c.secret[:])
	m.Write([]byte(owner))
	m.Write([]byte{0})
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// nextOpID names one Obtain call: its requests carry it (acquireRequest.op).
func (c *Client) nextOpID() string {
	return c.id + ":" + strconv.FormatUint(c.seq.Add(1), 10)
}

func validate(key string, ttl time.Duration) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %q: ttl %v is below 1ms", ErrInvalid, key, ttl)
	}
	return nil
}

// validateLock checks the lock options of an Obtain or TryObtain on key.
func validateLock(key string, lc lockConfig) error {
	if lc.reentrant && lc.owner == "" {
		return fmt.Errorf("%w: %q: a re-entrant lock needs an owner: locklib.Reentrant(owner)", ErrInvalid, key)
	}
	return nil
}
