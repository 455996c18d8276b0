package scanner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
)

// Options tune a Scanner. The zero value gives the defaults.
type Options struct {
	Pattern  string        // SCAN MATCH pattern; default DefaultPattern
	Count    int           // SCAN COUNT hint; default 1000
	Interval time.Duration // Watch: rest between passes (unpaced ones: at least as long as the pass); default 2s
	HashCap  int           // most fields read from a hash (HSCAN COUNT); default 64

	// Retries is how many times one step (a SCAN call or a batch of reads) is retried after a
	// connection error, with exponential back-off from 50 ms up to 2 s; default 8.
	Retries int

	// ConfigureNotifications lets Watch run CONFIG SET notify-keyspace-events so that keyspace
	// events speed up updates. Off by default: the scanner never changes server config unasked.
	ConfigureNotifications bool

	// EventsOnly follows locklib's events channel alone, without asking for keyspace
	// notifications or CLIENT TRACKING: for servers known to have neither (the demo's embedded
	// miniredis), where each refusal would only be a warning that nothing is wrong.
	EventsOnly bool

	// ScanBudget is the share of each server's time Watch's background re-scans may take
	// (0.02 is 2 %), paced by the measured time of each SCAN call and batch of reads; the
	// first pass runs at full speed. 1 or more: no pacing. Default DefaultScanBudget.
	ScanBudget float64
}

// DefaultScanBudget keeps a console's background re-scans at 2 % of a server's time, so that
// with the following and the re-reads of visible rows it stays well under 5 %.
const DefaultScanBudget = 0.02

// Census is the result of one full pass.
type Census struct {
	Locks    []Lock   // every matching key exactly once, in scan order
	Warnings []string // e.g. no permission to read values: holders unknown
	// Missing names the servers (cluster masters, Redlock instances) that could not be read:
	// when it is not empty, the census is partial.
	Missing   []string
	Scanned   int           // keys matching the pattern that SCAN returned, repeats included
	Duration  time.Duration // wall time of the pass
	FetchedAt time.Time     // when the pass started
}

// UpdateKind says what an Update carries.
type UpdateKind int

const (
	// UpdateBatch carries Locks found by the pass Gen, or keys re-read during it because a
	// change was heard of or they are in focus (Gone locks in it were deleted).
	UpdateBatch UpdateKind = iota
	// UpdatePassDone says pass Gen is complete: keys not seen in it are gone. Census holds the
	// pass summary (Warnings, Missing, Scanned, Duration; Locks is nil).
	UpdatePassDone
	// UpdateWarning carries one new Warning (permissions, a missing server, ...).
	UpdateWarning
	// UpdateRetrying says a connection error happened and the step is retried after RetryIn;
	// Err says what failed. The pass continues from where it was.
	UpdateRetrying
	// UpdateError says pass Gen failed (Err); the next pass starts after Interval.
	UpdateError
	// UpdateFollowing says how fresh Watch keeps the census (Following): how each server is
	// followed, and how far the background re-scan is. Sent when it changes.
	UpdateFollowing
	// UpdateClock says server Addr answered a heartbeat (about once a second per server),
	// with its clock (Clock): a server that stops answering stops sending these. Without a
	// Clock (Answered zero), Addr is no longer a server of the target: forget it.
	UpdateClock
)

func (k UpdateKind) String() string {
	switch k {
	case UpdateBatch:
		return "batch"
	case UpdatePassDone:
		return "pass-done"
	case UpdateWarning:
		return "warning"
	case UpdateRetrying:
		return "retrying"
	case UpdateError:
		return "error"
	case UpdateFollowing:
		return "following"
	case UpdateClock:
		return "clock"
	}
	return "unknown"
}

// Update is one message of Watch.
type Update struct {
	Kind    UpdateKind
	Gen     uint64 // the pass this belongs to; passes count from 1
	Locks   []Lock // UpdateBatch
	Census  Census // UpdatePassDone: the pass summary
	Warning string // UpdateWarning
	Err     error  // UpdateRetrying, UpdateError
	Attempt int    // UpdateRetrying: 1 for the first retry
	RetryIn time.Duration
	Addr    string // the server concerned, when one is
	// Following: UpdateFollowing.
	Following Following
	// Clock: UpdateClock.
	Clock ServerClock
}

// ErrText is what failed, for people: Err's text after the server concerned, if one is
// (UpdateRetrying, UpdateError).
func (u Update) ErrText() string {
	s := "unknown error"
	if u.Err != nil {
		s = u.Err.Error()
	}
	if u.Addr != "" {
		s = u.Addr + ": " + s
	}
	return s
}

// ErrGone is returned by Get for a key that exists on no server.
var ErrGone = errors.New("scanner: key does not exist")

// ErrIndependent is returned by Get on a target of independent servers, where a key names
// one lock per server.
var ErrIndependent = errors.New("scanner: independent servers: read the key on each server's own target")

// ErrUnreachable is returned when no server of the target could be read. It also matches
// connect.ErrUnreachable (errors.Is), so the error is classified as an unreachable server.
var ErrUnreachable error = unreachableError{}

type unreachableError struct{}

func (unreachableError) Error() string        { return "scanner: no server of the target could be read" }
func (unreachableError) Is(target error) bool { return target == connect.ErrUnreachable }

// Scanner takes censuses of one connect.Target. It keeps no connection of its own (the Target's
// clients belong to the caller) and is safe for concurrent use.
type Scanner struct {
	target connect.Target
	opts   Options
}

// DefaultPattern is the key pattern of a census when none is given: the keys of locks.
const DefaultPattern = "lock:*"

// New returns a Scanner for t; zero fields of opts take their defaults.
func New(t connect.Target, opts Options) *Scanner {
	if opts.Pattern == "" {
		opts.Pattern = DefaultPattern
	}
	if opts.Count <= 0 {
		opts.Count = 1000
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.HashCap <= 0 {
		opts.HashCap = 64
	}
	if opts.Retries <= 0 {
		opts.Retries = 8
	}
	if opts.ScanBudget <= 0 {
		opts.ScanBudget = DefaultScanBudget
	}
	return &Scanner{target: t, opts: opts}
}

// Options returns the options in effect (defaults filled in).
func (s *Scanner) Options() Options { return s.opts }

// Get reads one key on every server of the target (for `lockscope show` and the detail pane).
// A key that exists nowhere comes back with Gone set, where it was looked for (Addr, or for
// Redlock the Quorum's Instances), and ErrGone.
//
// Independent servers hold a key each on its own: Get refuses them (ErrIndependent); read the
// key on each server's own target (connect.Target.On).
func (s *Scanner) Get(ctx context.Context, key string) (Lock, error) {
	if s.target.Mode == connect.Independent {
		return Lock{Key: key}, ErrIndependent
	}
	p := s.newPass(sink{})
	readers, err := s.readersFor(ctx, key)
	if err != nil {
		return Lock{Key: key}, err
	}
	locks := make([]Lock, 1)
	if err := s.readLocks(ctx, []string{key}, readers, newReaders(readers), p, locks); err != nil {
		return Lock{Key: key}, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if locks[0].Key != "" {
		return locks[0], nil
	}
	if c, _ := p.summary(ctx, nil); len(readers) > 1 && len(c.Missing) == len(readers) {
		return Lock{Key: key}, fmt.Errorf("%w: every instance is down (%s)", ErrUnreachable, strings.Join(c.Missing, ", "))
	}
	gone := Lock{Key: key, Gone: true, FetchedAt: p.fetched}
	if s.target.Mode != connect.Redlock {
		gone.Addr = readers[0].addr
		return gone, ErrGone
	}
	q := &Quorum{Needed: len(readers)/2 + 1, Total: len(readers)}
	for _, r := range readers {
		q.Instances = append(q.Instances, Instance{Addr: r.addr, Missing: p.isMissing(r.addr)})
	}
	gone.Quorum = q
	return gone, ErrGone
}

// servers lists the standalone server or the Redlock instances, in Target order.
func (s *Scanner) servers() []server {
	out := make([]server, len(s.target.Clients))
	for i, c := range s.target.Clients {
		out[i] = server{addr: s.addr(i), rdb: c}
	}
	return out
}

// readersFor says where to read key: for a cluster, the master that owns its slot now.
func (s *Scanner) readersFor(ctx context.Context, key string) ([]server, error) {
	if s.target.Mode != connect.Cluster {
		return s.servers(), nil
	}
	cc, ok := s.target.Clients[0].(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("scanner: cluster target needs a *redis.ClusterClient, got %T", s.target.Clients[0])
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return []server{{addr: node.Options().Addr, rdb: cc}}, nil
}

// addr is the display address of client i: from the Target (ServerAddr), else from the client.
func (s *Scanner) addr(i int) string {
	if a := s.target.ServerAddr(i); a != "" {
		return a
	}
	if c, ok := s.target.Clients[i].(*redis.Client); ok {
		return c.Options().Addr
	}
	return fmt.Sprintf("server %d", i+1)
}
