package actions

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

// A shared lock is one that several holders may hold at once: a lockscope read-write lock or
// lease semaphore (a lease set, docs/value-format.md), a Redisson RReadWriteLock, a Redisson
// RPermitExpirableSemaphore. ReleaseHolder force-releases one of its holders with the same
// compare-and-act safety as Release: the operator names the holder and what they saw of it
// (Holder.Seen), and the script removes that holder only if it still holds exactly that,
// leaving every other holder as it is.

// SharedKind is how a key holds a shared lock.
type SharedKind string

// The kinds PeekHolders tells apart.
const (
	KindLeaseSet          SharedKind = "lease-set"          // lockscope: read-write lock or lease semaphore (a sorted set)
	KindRedissonRW        SharedKind = "redisson-rwlock"    // Redisson RReadWriteLock (a hash with a mode field)
	KindRedissonPermits   SharedKind = "redisson-permits"   // Redisson RPermitExpirableSemaphore (a string and {key}:timeout)
	KindRedissonSemaphore SharedKind = "redisson-semaphore" // Redisson RSemaphore: a count, no record of who holds permits (or an RPermitExpirableSemaphore with none out)
)

// ErrNoHolders is returned by PeekHolders for a Redisson semaphore with no permit on record: an
// RSemaphore records only how many permits are left, never who took them, so no holder can be
// named or released (an RPermitExpirableSemaphore with no permit out reads the same).
var ErrNoHolders = errors.New("a Redisson RSemaphore records no holders, only the count of permits left: " +
	"no permit can be released on a holder's behalf")

// ErrNoKey is returned by PeekHolders for a key that does not exist.
var ErrNoKey = errors.New("actions: no such key")

// ErrNotShared is returned for a per-holder release of a key that is not a shared lock (a plain
// lock has one holder: Release it).
var ErrNotShared = errors.New("not a lock with several holders")

// Holder is one holder of a shared lock, as PeekHolders read it.
type Holder struct {
	// ID names the holder: a lease set's owner (its values' rand, 16 hex digits), a Redisson
	// read-write lock's owner field "<uuid>:<threadId>" (no ":write"), a Redisson permit's id
	// (32 lowercase hex digits).
	ID    string
	Mode  protocol.Mode // ModeRead, ModeWrite or ModePermit
	Count int           // levels held (re-entries); 1 for a permit
	// Seen is what a release of this holder compares, exactly (ReleaseHolder's seen): a lease
	// set's members of this owner, sorted, one a line; a Redisson read-write lock's mode and
	// this owner's fields in canonical hash form (hash{<uuid>:<tid>=1,mode=read}); a permit's
	// "<id> <deadline unix ms>".
	Seen string
	// TTL is the holder's own time left (negative: no expiry): its latest lease deadline, its
	// read levels' longest PTTL, the write lock's PTTL, the permit's deadline.
	TTL time.Duration
	// Lease sets only, from the owner's latest member: who and since when.
	Node, Trace string
	AcquiredAt  time.Time
}

// Holders is who holds a shared lock right now, read in full on one server.
type Holders struct {
	Key     string
	Kind    SharedKind
	Holders []Holder // sorted by ID
	// Available is a Redisson semaphore's count of permits left; Limit a lease semaphore's
	// limit:{key} (0 when it has none, or for other kinds).
	Available, Limit int
}

// HolderText is how a holder is named to an operator: its mode and ID.
func (h Holder) String() string { return h.Mode.String() + " " + h.ID }

//go:embed holderrelease.lua
var holderReleaseLua string

var (
	holderReleaseSource = protocol.LuaLibrary() + redissonLua + "\n" + holderReleaseLua
	holderReleaseScript = redis.NewScript(holderReleaseSource)
)

// ReleaseHolder removes one holder of the shared lock at key, the one with id, when it still
// holds exactly seen (Holder.Seen from PeekHolders), in one script per instance; every other
// holder is left as it is. The holder's own next renewal then fails and its Lock reports Lost.
// After a lease set member is removed, the key's TTL is set to its latest remaining deadline
// (or it is deleted when none is left) and the first live waiter is woken, as a release does;
// a Redisson read-write lock's waiters are told as Redisson's unlock tells them once the last
// holder went; a Redisson permit is given back to the count of permits left and its waiters
// told. One audit record is written (action release-holder, holder id and seen).
//
// Errors as for Release, plus ErrBadRequest when id and seen do not name a holder of one kind.
func (a *Admin) ReleaseHolder(ctx context.Context, key, id, seen, reason string) (Result, error) {
	res := Result{Action: ActionReleaseHolder, Key: key, Holder: id, Seen: seen}
	if a.opts.ReadOnly {
		return res, ErrReadOnly
	}
	keys, args, err := holderScriptArgs(key, id, seen, a.target.Mode == connect.Cluster)
	if err != nil {
		return res, err
	}
	err = a.runEverywhere(ctx, &res, holderReleaseScript, holderReleaseSource, Released, keys, args, reason)
	return res, err
}

// holderScriptArgs builds KEYS and ARGV as holderrelease.lua documents them, from the kind of
// holder seen names.
func holderScriptArgs(key, id, seen string, cluster bool) (keys []string, args []any, err error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: holder %q of %s: %s", ErrBadRequest, id, key, why)
	}
	if key == "" {
		return nil, nil, fmt.Errorf("%w: empty key", ErrBadRequest)
	}
	switch {
	case isPermitSeen(seen):
		permit, deadline, _ := strings.Cut(seen, " ")
		if permit != id {
			return nil, nil, bad("the seen permit is " + permit)
		}
		raw, _ := hex.DecodeString(permit)
		return []string{key, scanner.RedissonPermitsKey(key)},
			[]any{"permit", string(raw), deadline, scanner.RedissonSemaphoreChannel(key)}, nil
	case strings.HasPrefix(seen, hashPrefix):
		fields, ok := ParseCanonicalHash(seen)
		mode := fields["mode"]
		if !ok || mode != "read" && mode != "write" || len(fields) > 3 {
			return nil, nil, bad("not a Redisson read-write lock holder's fields")
		}
		readCount := 0
		for f, v := range fields {
			switch f {
			case "mode":
			case id:
				readCount, err = strconv.Atoi(v)
			case id + ":write":
				_, err = strconv.Atoi(v)
			default:
				return nil, nil, bad("field " + f + " is another holder's")
			}
			if err != nil {
				return nil, nil, bad("a count of " + v)
			}
		}
		if _, isWriter := fields[id+":write"]; (mode == "write") != isWriter || readCount > maxRedissonLevels {
			return nil, nil, bad("mode " + mode + " with these fields")
		}
		keys = []string{key}
		for level := 1; level <= readCount; level++ {
			keys = append(keys, scanner.RedissonLevelKey(key, id, level))
		}
		args = []any{"redisson-rw", id, scanner.RedissonRWChannel(key), strconv.Itoa(len(fields))}
		for f, v := range fields {
			args = append(args, f, v)
		}
		return keys, args, nil
	}
	members := strings.Split(seen, "\n")
	for _, m := range members {
		lm, ok := protocol.ParseLeaseMember(m)
		if !ok || lm.Value.Rand != id {
			return nil, nil, bad("not this owner's lease set members")
		}
	}
	slices.Sort(members)
	keys = []string{key}
	if !cluster || protocol.CompanionsInSlot(key) {
		keys = append(keys, protocol.WaitQueueKey(key), protocol.WaitPresenceKey(key), protocol.LimitKey(key))
	}
	return keys, []any{"lease", id, strings.Join(members, "\n")}, nil
}

// maxRedissonLevels bounds the read levels whose keys a release names (Redisson writes one
// key per level: a holder with more re-entries than this is not believed).
const maxRedissonLevels = 1000

// isPermitSeen reports whether seen is a Redisson permit as Holder.Seen writes it.
func isPermitSeen(seen string) bool {
	permit, deadline, ok := strings.Cut(seen, " ")
	if !ok || len(permit) != 32 || strings.ToLower(permit) != permit {
		return false
	}
	if _, err := hex.DecodeString(permit); err != nil {
		return false
	}
	_, err := strconv.ParseInt(deadline, 10, 64)
	return err == nil
}

// PeekHolders reads every holder of the shared lock at key on the target's first instance
// (shared locks are not Redlock's), in full. It is allowed in read-only mode and writes
// nothing. The error wraps ErrNoKey for a key that does not exist, ErrNotShared for a key that
// is no shared lock, and ErrNoHolders
// comes back with the Holders of a Redisson RSemaphore (Kind and Available are set).
func (a *Admin) PeekHolders(ctx context.Context, key string) (Holders, error) {
	hs := Holders{Key: key}
	if len(a.target.Clients) == 0 {
		return hs, errors.New("actions: the target has no instances")
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.InstanceTimeout)
	defer cancel()
	c := a.target.Clients[0]
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return hs, fmt.Errorf("read %s: %w", key, err)
	}
	switch typ {
	case "zset":
		hs.Kind = KindLeaseSet
		err = peekLeaseSet(ctx, c, &hs)
	case "hash":
		hs.Kind = KindRedissonRW
		err = peekRedissonRW(ctx, c, &hs)
	case "string":
		err = peekRedissonSemaphore(ctx, c, &hs)
	case "none":
		return hs, fmt.Errorf("%w: %s", ErrNoKey, key)
	default:
		return hs, fmt.Errorf("%w: %s is a %s", ErrNotShared, key, typ)
	}
	slices.SortFunc(hs.Holders, func(x, y Holder) int { return strings.Compare(x.ID, y.ID) })
	return hs, err
}

func peekLeaseSet(ctx context.Context, c redis.UniversalClient, hs *Holders) error {
	var members *redis.ZSliceCmd
	var now *redis.TimeCmd
	var limit *redis.StringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		members = p.ZRangeWithScores(ctx, hs.Key, 0, -1)
		limit = p.Get(ctx, protocol.LimitKey(hs.Key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read %s: %w", hs.Key, err)
	}
	hs.Limit, _ = strconv.Atoi(limit.Val())
	nowMs := now.Val().UnixMilli()
	byOwner := map[string]int{}
	seen := map[string][]string{}
	for _, z := range members.Val() {
		text, _ := z.Member.(string)
		m, ok := protocol.ParseLeaseMember(text)
		if !ok {
			return fmt.Errorf("%w: %s is a sorted set with a member in no lease set layout", ErrNotShared, hs.Key)
		}
		if int64(z.Score) <= nowMs { // expired: no holder (docs/value-format.md)
			continue
		}
		owner := m.Value.Rand
		at, known := byOwner[owner]
		if !known {
			at = len(hs.Holders)
			byOwner[owner] = at
			hs.Holders = append(hs.Holders, Holder{ID: owner, Mode: m.Mode})
		}
		h := &hs.Holders[at]
		h.Count++
		if m.Mode == protocol.ModeWrite { // a writer holding read levels too is a writer
			h.Mode = protocol.ModeWrite
		}
		if ttl := time.Duration(int64(z.Score)-nowMs) * time.Millisecond; ttl > h.TTL {
			h.TTL, h.Node, h.Trace = ttl, m.Value.Node, m.Value.Trace
			h.AcquiredAt = m.Value.AcquiredAt
		}
		seen[owner] = append(seen[owner], text)
	}
	for i := range hs.Holders {
		members := seen[hs.Holders[i].ID]
		slices.Sort(members)
		hs.Holders[i].Seen = strings.Join(members, "\n")
	}
	return nil
}

func peekRedissonRW(ctx context.Context, c redis.UniversalClient, hs *Holders) error {
	fields, err := c.HGetAll(ctx, hs.Key).Result()
	if err != nil {
		return fmt.Errorf("read %s: %w", hs.Key, err)
	}
	mode, ok := fields["mode"]
	if !ok {
		return fmt.Errorf("%w: %s is a Redisson lock with one holder (no mode field): release it without naming a holder", ErrNotShared, hs.Key)
	}
	owners := map[string]map[string]string{}
	for f, v := range fields {
		if f == "mode" {
			continue
		}
		id := strings.TrimSuffix(f, ":write")
		if owners[id] == nil {
			owners[id] = map[string]string{"mode": mode}
		}
		owners[id][f] = v
	}
	pttl := c.PTTL(ctx, hs.Key).Val()
	for id, mine := range owners {
		h := Holder{ID: id, Mode: protocol.ModeRead, Seen: CanonicalHash(mine), TTL: pttl}
		if _, w := mine[id+":write"]; w {
			h.Mode = protocol.ModeWrite
		}
		reads, _ := strconv.Atoi(mine[id])
		if h.Mode == protocol.ModeWrite {
			h.Count, _ = strconv.Atoi(mine[id+":write"])
		} else {
			h.Count = reads
			h.TTL = -1
			// A reader's own lease is its levels' keys' (the hash lives as long as the longest).
			for level := 1; level <= min(reads, maxRedissonLevels); level++ {
				if d := c.PTTL(ctx, scanner.RedissonLevelKey(hs.Key, id, level)).Val(); d > h.TTL {
					h.TTL = d
				}
			}
		}
		hs.Holders = append(hs.Holders, h)
	}
	return nil
}

// peekRedissonSemaphore reads a string key as a Redisson semaphore: its count of permits
// left, and, for an RPermitExpirableSemaphore, the permits out ({key}:timeout).
func peekRedissonSemaphore(ctx context.Context, c redis.UniversalClient, hs *Holders) error {
	v, err := c.Get(ctx, hs.Key).Result()
	if err != nil {
		return fmt.Errorf("read %s: %w", hs.Key, err)
	}
	if hs.Available, err = strconv.Atoi(v); err != nil || hs.Available < 0 {
		return fmt.Errorf("%w: %s is a plain lock with one holder: release it without naming a holder", ErrNotShared, hs.Key)
	}
	permits := scanner.RedissonPermitsKey(hs.Key)
	var typ *redis.StatusCmd
	var members *redis.ZSliceCmd
	var now *redis.TimeCmd
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		typ = p.Type(ctx, permits)
		members = p.ZRangeWithScores(ctx, permits, 0, -1)
		return nil
	})
	if typ.Val() == "none" {
		hs.Kind = KindRedissonSemaphore
		return ErrNoHolders
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", permits, err)
	}
	hs.Kind = KindRedissonPermits
	for _, z := range members.Val() {
		raw, _ := z.Member.(string)
		deadline := int64(z.Score)
		id := hex.EncodeToString([]byte(raw))
		ttl := time.Duration(max(0, deadline-now.Val().UnixMilli())) * time.Millisecond
		if deadline >= scanner.RedissonNoExpiryMs {
			ttl = -1
		}
		hs.Holders = append(hs.Holders, Holder{
			ID: id, Mode: protocol.ModePermit, Count: 1,
			Seen: id + " " + strconv.FormatInt(deadline, 10), TTL: ttl,
		})
	}
	return nil
}
