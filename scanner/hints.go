package scanner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Mechanism is how Watch hears, between passes, that a key on one server changed.
type Mechanism string

const (
	// FollowNotifications: keyspace notifications for the pattern (the server has
	// notify-keyspace-events on for them, or Options.ConfigureNotifications turned them on).
	FollowNotifications Mechanism = "notifications"
	// FollowTracking: CLIENT TRACKING in broadcast mode for the pattern's literal prefix
	// (Redis 6 and later), redirected to the subscriber connection itself: creations,
	// deletions, expirations and TTL changes, with no server configuration.
	FollowTracking Mechanism = "tracking"
	// FollowEvents: locklib's events channel only (the server refused the others). Other
	// clients' changes wait for the background re-scan, and a key is re-read when its TTL
	// runs out.
	FollowEvents Mechanism = "events"
)

// ServerFollow is how one server (the standalone server, a cluster master, a Redlock
// instance) is followed.
type ServerFollow struct {
	Addr      string
	Mechanism Mechanism
}

// Following says how fresh Watch keeps the census between passes.
type Following struct {
	Servers []ServerFollow // in address order
	Budget  float64        // Options.ScanBudget
	// Rescan is how far the background re-scan is, from 0 to 1 (its keys so far against
	// the last complete pass's); 0 while none runs.
	Rescan float64
}

// Summary names the mechanisms in use: "tracking", or "tracking+events" when the servers
// differ; "" before any server is followed.
func (f Following) Summary() string {
	var names []string
	for _, sf := range f.Servers {
		if !slices.Contains(names, string(sf.Mechanism)) {
			names = append(names, string(sf.Mechanism))
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

// Degraded reports whether some server is followed by locklib's events only.
func (f Following) Degraded() bool {
	for _, sf := range f.Servers {
		if sf.Mechanism == FollowEvents {
			return true
		}
	}
	return false
}

// invalidateChannel is where CLIENT TRACKING sends the keys it invalidates to a RESP2
// connection that is subscribed to it.
const invalidateChannel = "__redis__:invalidate"

// followed is a server to follow: its address, its options (to open a subscriber of its
// own) and a client to ask about its configuration.
type followed struct {
	addr string
	opts *redis.Options
	rdb  redis.Cmdable
}

// follow subscribes, on every server of the target, to what tells of changed keys: keyspace
// notifications when the server has them on, else CLIENT TRACKING, else only locklib's events
// channel (each refusal is a warning). Keys heard of go into dirty; a subscriber that had to
// reconnect, or heard of a change without its keys (a flush), calls reconnected, since what
// happened was not heard key by key. Subscribers end
// with ctx. It returns how each server is followed.
func (s *Scanner) follow(ctx context.Context, dirty *dirtyKeys, reconnected func(), warn func(string)) []ServerFollow {
	targets, err := s.followTargets(ctx)
	if err != nil {
		warn("cannot follow changes: " + err.Error() + "; the census is kept fresh by the background re-scan only")
	}
	out := make([]ServerFollow, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		// Every cluster node delivers every PUBLISH: one of them carries the events.
		events := i == 0 || s.target.Mode != connect.Cluster
		wg.Go(func() {
			out[i] = ServerFollow{Addr: t.addr, Mechanism: s.followServer(ctx, t, events, dirty, reconnected, warn)}
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// followTargets lists the servers to follow: every master of a cluster, every Redlock
// instance, every independent server, or the standalone server.
func (s *Scanner) followTargets(ctx context.Context) ([]followed, error) {
	if s.target.Mode == connect.Cluster {
		cc, ok := s.target.Clients[0].(*redis.ClusterClient)
		if !ok {
			return nil, fmt.Errorf("a cluster target needs a *redis.ClusterClient, got %T", s.target.Clients[0])
		}
		var mu sync.Mutex
		var out []followed
		err := cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			out = append(out, followed{addr: node.Options().Addr, opts: node.Options(), rdb: node})
			return nil
		})
		return out, err
	}
	var out []followed
	for i, c := range s.target.Clients {
		rc, ok := c.(*redis.Client)
		if !ok {
			return out, fmt.Errorf("%s: cannot open a subscriber beside a %T", s.addr(i), c)
		}
		out = append(out, followed{addr: s.addr(i), opts: rc.Options(), rdb: rc})
	}
	return out, nil
}

// followServer sets up the best mechanism the server allows and returns which one it is.
func (s *Scanner) followServer(ctx context.Context, t followed, events bool, dirty *dirtyKeys, reconnected func(), warn func(string)) Mechanism {
	if !s.opts.EventsOnly {
		if mech, ok := s.followKeyChanges(ctx, t, events, dirty, reconnected, warn); ok {
			return mech
		}
	}
	if events {
		if err := s.listen(ctx, t, FollowEvents, true, dirty, reconnected); err != nil {
			warn("cannot subscribe to " + protocol.EventsChannel + " on " + t.addr + ": " + err.Error())
		}
	}
	return FollowEvents
}

// followKeyChanges follows t by keyspace notifications, else by CLIENT TRACKING; ok is false
// (after a warning) when the server allows neither.
func (s *Scanner) followKeyChanges(ctx context.Context, t followed, events bool, dirty *dirtyKeys, reconnected func(), warn func(string)) (mech Mechanism, ok bool) {
	if s.opts.ConfigureNotifications {
		if err := enableNotifications(ctx, t.rdb); err != nil {
			warn("could not enable keyspace notifications on " + t.addr + ": " + err.Error())
		}
	}
	if notificationsOn(ctx, t.rdb) {
		err := s.listen(ctx, t, FollowNotifications, events, dirty, reconnected)
		if err == nil {
			return FollowNotifications, true
		}
		warn("keyspace notifications unavailable on " + t.addr + ": " + err.Error() + "; trying CLIENT TRACKING")
	}
	if err := s.listen(ctx, t, FollowTracking, events, dirty, reconnected); err != nil {
		warn("CLIENT TRACKING refused on " + t.addr + ": " + err.Error() +
			"; following locklib events only, other changes wait for the background re-scan")
		return "", false
	}
	return FollowTracking, true
}

// listen opens a subscriber connection of its own to t, in RESP2 so that tracking
// invalidations arrive as messages on invalidateChannel, and forwards the keys it hears of
// to dirty until ctx ends. For tracking, every connection it opens first turns tracking on,
// redirected to itself (its own CLIENT ID), so a reconnect restores it; for notifications,
// tracking of flushes only, where the server allows it. A reply error means
// the server refused the mechanism (ACL, unknown command): nothing is left open. Other
// errors (the server is down now) are left to go-redis, which connects and subscribes later.
func (s *Scanner) listen(ctx context.Context, t followed, mech Mechanism, events bool, dirty *dirtyKeys, reconnected func()) error {
	o := *t.opts
	o.Protocol = 2
	own := o.OnConnect
	var connects atomic.Int64
	prefixes := trackingPrefixes(s.opts.Pattern)
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if own != nil {
			if err := own(ctx, cn); err != nil {
				return err
			}
		}
		switch mech {
		case FollowTracking:
			if err := enableTracking(ctx, cn, prefixes...); err != nil {
				return err
			}
		case FollowNotifications:
			// No keyspace event names the keys a FLUSHALL removes, but every tracking
			// connection hears of a flush: tracking a prefix no lock has hears of nothing else.
			// Where tracking is refused, a flush waits for the background re-scan.
			if err := enableTracking(ctx, cn, flushOnlyPrefix); err != nil && !isReply(err) {
				return err
			}
		}
		if connects.Add(1) > 1 {
			reconnected()
		}
		return nil
	}
	var channels []string
	if mech != FollowEvents {
		channels = append(channels, invalidateChannel)
	}
	if events {
		channels = append(channels, protocol.EventsChannel)
	}
	client := redis.NewClient(&o)
	sub := client.Subscribe(ctx)
	var err error
	if len(channels) > 0 {
		err = sub.Subscribe(ctx, channels...)
	}
	subscriptions := len(channels)
	if err == nil && mech == FollowNotifications {
		err = sub.PSubscribe(ctx, fmt.Sprintf("__keyspace@%d__:%s", o.DB, s.opts.Pattern))
		subscriptions++
	}
	if err == nil {
		err = s.confirmSubscriptions(ctx, sub, subscriptions, dirty)
	}
	if p := redissonSuffixedPattern(s.opts.Pattern); err == nil && mech == FollowNotifications && p != "" {
		s.subscribeIfAllowed(ctx, sub, fmt.Sprintf("__keyspace@%d__:%s", o.DB, p), dirty)
	}
	if err != nil && isReply(err) {
		sub.Close()
		client.Close()
		return err
	}
	go s.forwardHints(ctx, sub, client, dirty, reconnected)
	return nil
}

// subscribeIfAllowed subscribes sub to pattern too, unless the server refuses it (an ACL
// written for the lock pattern only): Redisson's companions are then heard of with their lock,
// or at the background re-scan, and go-redis forgets the pattern rather than ask for it again
// at each reconnect.
func (s *Scanner) subscribeIfAllowed(ctx context.Context, sub *redis.PubSub, pattern string, dirty *dirtyKeys) {
	if sub.PSubscribe(ctx, pattern) != nil {
		return
	}
	if err := s.confirmSubscriptions(ctx, sub, 1, dirty); err != nil && isReply(err) {
		_ = sub.PUnsubscribe(ctx, pattern)
	}
}

// subscribeConfirmWait bounds the wait for the server's answers to the subscriptions.
const subscribeConfirmWait = 5 * time.Second

// confirmSubscriptions waits for the server's answer to each of n subscriptions: go-redis
// sends them without reading the replies, so a refusal (an ACL whose channel rules leave out
// the keyspace pattern) would otherwise surface at the first read only, after the mechanism
// was reported in use. Messages that arrive meanwhile are heard as usual. A network error or
// no answer in time is not a refusal: go-redis subscribes again when it reconnects.
func (s *Scanner) confirmSubscriptions(ctx context.Context, sub *redis.PubSub, n int, dirty *dirtyKeys) error {
	for n > 0 {
		msg, err := sub.ReceiveTimeout(ctx, subscribeConfirmWait)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			n--
		case *redis.Message:
			s.hear(m, dirty)
		}
	}
	return nil
}

// flushOnlyPrefix is the tracking prefix of a subscriber that follows keyspace notifications:
// one no lock key starts with, so that it hears of flushes only.
const flushOnlyPrefix = "\x00lockscope:flush-only\x00"

// enableTracking turns on broadcast tracking of keys starting with any of prefixes (all keys
// when there is none) on cn, redirected to cn itself.
func enableTracking(ctx context.Context, cn *redis.Conn, prefixes ...string) error {
	id, err := cn.ClientID(ctx).Result()
	if err != nil {
		return err
	}
	args := []any{"client", "tracking", "on", "redirect", id, "bcast"}
	for _, p := range prefixes {
		args = append(args, "prefix", p)
	}
	return cn.Do(ctx, args...).Err()
}

// trackingPrefixes are the prefixes that tracking follows for pattern: its literal prefix,
// and that of redissonSuffixedPattern; none (every key) for a pattern without one.
func trackingPrefixes(pattern string) []string {
	prefix := literalPrefix(pattern)
	if prefix == "" {
		return nil
	}
	if p := redissonSuffixedPattern(pattern); p != "" {
		return []string{prefix, literalPrefix(p)}
	}
	return []string{prefix}
}

// literalPrefix is the part of a glob pattern before its first special character: every
// key the pattern matches starts with it.
func literalPrefix(pattern string) string {
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		return pattern[:i]
	}
	return pattern
}

// notificationsOn reports whether the server sends keyspace notifications for every change
// of a lock key: K (keyspace channel) and g, $, h, x and e (or A, which includes them;
// without e, locks evicted under maxmemory, which volatile-* policies pick among keys with a
// TTL, stayed in the census until the next pass). A user
// who may not run CONFIG GET gets false: tracking needs no configuration.
func notificationsOn(ctx context.Context, rdb redis.Cmdable) bool {
	cur, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return false
	}
	flags := cur["notify-keyspace-events"]
	if !strings.Contains(flags, "K") {
		return false
	}
	if strings.Contains(flags, "A") {
		return true
	}
	for _, f := range lockEvents {
		if !strings.ContainsRune(flags, f) {
			return false
		}
	}
	return true
}

// lockEvents are the keyspace event classes every change of a lock key falls in: generic,
// string, hash, sorted set (lease sets, a Redisson semaphore's permits), expired and evicted.
const lockEvents = "g$hzxe"

// hintsHealthCheck is how long a subscriber waits for a message before it pings the server,
// so that a dead connection is found and replaced.
const hintsHealthCheck = 30 * time.Second

// forwardHints reads the subscriber's messages (its own loop rather than PubSub.Channel,
// which drops a message it cannot decode without a word) until ctx ends.
func (s *Scanner) forwardHints(ctx context.Context, sub *redis.PubSub, client *redis.Client, dirty *dirtyKeys, lost func()) {
	defer client.Close()
	defer sub.Close()
	// A receive waits up to hintsHealthCheck whatever ctx says: closing the subscriber ends it
	// when ctx does, so a stopped Watch leaves no goroutine behind for half a minute.
	stop := context.AfterFunc(ctx, func() { _ = sub.Close() })
	defer stop()
	for ctx.Err() == nil {
		msg, err := sub.ReceiveTimeout(ctx, hintsHealthCheck)
		var netErr net.Error
		switch {
		case err == nil:
		case errors.As(err, &netErr) && netErr.Timeout():
			_ = sub.Ping(ctx) // a dead connection fails the next receive, which reconnects
			continue
		default:
			if !errors.As(err, &netErr) && !errors.Is(err, io.EOF) && ctx.Err() == nil {
				// Not the connection (go-redis reconnects, and OnConnect says so): a message
				// it could not decode, above all CLIENT TRACKING's null invalidation of every
				// key on FLUSHALL or FLUSHDB. Which keys changed is unknown: take the census again.
				lost()
			}
			sleepCtx(ctx, 100*time.Millisecond) // as PubSub.Channel does after an error
			continue
		}
		if m, ok := msg.(*redis.Message); ok { // else a subscription's confirmation or a pong
			s.hear(m, dirty)
		}
	}
}

// hear marks the keys under the pattern that m is about for a re-read. A companion of a lock
// under the pattern marks its lock instead: a Redisson reader's level or a semaphore's permits
// change what the lock's record shows (its holders' TTLs) without the lock key changing.
func (s *Scanner) hear(m *redis.Message, dirty *dirtyKeys) {
	for _, key := range hintKeys(m) {
		if lock, _, ok := companionOf(key); ok && MatchGlob(s.opts.Pattern, lock) {
			dirty.add(lock)
			continue
		}
		if sem, ok := redissonPermitsOf(key); ok && MatchGlob(s.opts.Pattern, sem) {
			dirty.add(sem) // key may be a lock of its own too: both are read
		}
		if MatchGlob(s.opts.Pattern, key) {
			dirty.add(key)
		}
	}
}

// redissonSuffixedPattern matches the companions Redisson names after the pattern's locks
// with its suffixName ("{<name>}:<suffix>": a reader's levels, a semaphore's permits), which
// the pattern itself does not match; "" when the names have a "{" of their own (Redisson
// then appends the suffix, and the pattern may match them already).
func redissonSuffixedPattern(pattern string) string {
	if strings.Contains(pattern, "{") {
		return ""
	}
	return "{" + pattern + "}:*"
}

// hintKeys extracts the keys a message is about.
func hintKeys(m *redis.Message) []string {
	switch {
	case m.Channel == invalidateChannel:
		return m.PayloadSlice
	case m.Channel == protocol.EventsChannel:
		var ev protocol.Event
		if json.Unmarshal([]byte(m.Payload), &ev) != nil || ev.Key == "" {
			return nil
		}
		return []string{ev.Key}
	}
	// __keyspace@<db>__:<key>
	if _, key, ok := strings.Cut(m.Channel, "__:"); ok {
		return []string{key}
	}
	return nil
}

// enableNotifications adds keyspace events for generic, string, hash, sorted set, expired and
// evicted changes to whatever notify-keyspace-events already holds (never removes a flag).
func enableNotifications(ctx context.Context, c redis.Cmdable) error {
	cur, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return err
	}
	flags := cur["notify-keyspace-events"]
	for _, f := range "K" + lockEvents {
		if !strings.ContainsRune(flags, f) {
			flags += string(f)
		}
	}
	return c.ConfigSet(ctx, "notify-keyspace-events", flags).Err()
}
