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
// compare-and-act safety as Release: the operator names the holder (scanner.SharedHolder's ID)
// and what they saw of it (SeenFor), and the script removes that holder only if it still holds exactly that,
// leaving every other holder as it is.

// ErrNoHolders is returned for a Redisson semaphore with no permit on record: an RSemaphore
// records only how many permits are left, never who took them, so no holder can be named or
// released (an RPermitExpirableSemaphore with no permit out reads the same).
var ErrNoHolders = errors.New("a Redisson RSemaphore records no holders, only the count of permits left: " +
	"no permit can be released on a holder's behalf")

// ErrNoKey is returned by PeekHolders for a key that does not exist.
var ErrNoKey = errors.New("actions: no such key")

// ErrNotShared is returned for a per-holder release of a key that is not a lock with several
// holders (a plain lock has one: Release it).
var ErrNotShared = errors.New("not a lock with several holders")

//go:embed holderrelease.lua
var holderReleaseLua string

var (
	holderReleaseSource = protocol.LuaLibrary() + redissonLua + "\n" + holderReleaseLua
	holderReleaseScript = redis.NewScript(holderReleaseSource)
)

// ReleaseHolder removes one holder of the shared lock at key, the one with id, when it still
// holds exactly seen (SeenFor of the holder as the scanner or PeekHolders read it), in one
// script per instance; every other holder is left as it is. The holder's own next renewal then
// fails and its Lock reports Lost. After a lease set's members are removed, the key's TTL is
// set to its latest remaining deadline (or it is deleted when none is left) and the waiters the
// change admits are woken, as a release does;
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
	args = append(args, "release", "0")
	err = a.runEverywhere(ctx, &res, holderReleaseScript, holderReleaseSource, Released, keys, args, reason)
	return res, err
}

// ExtendHolder gives holder id of the shared lock at key ttl from now, when it still holds
// exactly seen (as ReleaseHolder compares it): each of its leases (a lease set's members, a
// Redisson reader's levels, a writer's hash, a permit) is raised to ttl, the key lives as long
// as its latest lease, and the other holders are left as they are. It never shortens: a
// holder whose leases all live longer is left as it is (WouldShorten, TTLLeft its longest).
// A Redisson permit's new deadline is on the server's clock (Redisson scores them on its
// client's). One audit record (action extend-holder). Errors as for ReleaseHolder.
func (a *Admin) ExtendHolder(ctx context.Context, key, id, seen string, ttl time.Duration, reason string) (Result, error) {
	res := Result{Action: ActionExtendHolder, Key: key, Holder: id, Seen: seen, TTL: ttl}
	if a.opts.ReadOnly {
		return res, ErrReadOnly
	}
	if ttl < time.Millisecond {
		return res, fmt.Errorf("%w: extend needs a TTL of at least 1ms, got %v", ErrBadRequest, ttl)
	}
	keys, args, err := holderScriptArgs(key, id, seen, a.target.Mode == connect.Cluster)
	if err != nil {
		return res, err
	}
	args = append(args, "extend", strconv.FormatInt(ttl.Milliseconds(), 10))
	err = a.runEverywhere(ctx, &res, holderReleaseScript, holderReleaseSource, Extended, keys, args, reason)
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

// isPermitSeen reports whether seen is a Redisson permit as SeenFor writes it.
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

// peekHoldersCap is the most holders (lease set members, hash fields, permits) PeekHolders
// reads: the census's cap (scanner.Options.HashCap) is for a million keys, not for one.
const peekHoldersCap = 10_000

// PeekHolders reads the shared lock at key as the console shows it (scanner.Get), with all its
// holders (up to peekHoldersCap), for SeenFor and ReleaseHolder. It is allowed in read-only
// mode and writes nothing. The error wraps ErrNoKey for a key that does not exist,
// ErrNotShared for one that is no shared lock, ErrNoHolders for a Redisson RSemaphore (the
// lock read comes back with it), ErrInexactValue for one with more holders than the cap.
func (a *Admin) PeekHolders(ctx context.Context, key string) (scanner.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.InstanceTimeout)
	defer cancel()
	l, err := scanner.New(a.target, scanner.Options{HashCap: peekHoldersCap}).Get(ctx, key)
	switch {
	case errors.Is(err, scanner.ErrGone):
		return l, fmt.Errorf("%w: %s", ErrNoKey, key)
	case err != nil:
		return l, err
	case l.Shared == nil && l.Format == scanner.FormatNotALock:
		return l, fmt.Errorf("%w: %s is a %s", ErrNotShared, key, l.Type)
	case l.Shared == nil:
		return l, fmt.Errorf("%w: %s is a lock with one holder: release it without naming a holder", ErrNotShared, key)
	case l.Shared.HoldersUnknown:
		return l, ErrNoHolders
	case l.Shared.Truncated:
		return l, fmt.Errorf("%w: %s has more than %d holders", ErrInexactValue, key, peekHoldersCap)
	}
	return l, nil
}

// LiveHolder is the live holder id of l (its write mode first, where it holds read levels
// too); ok false when none holds anything under that id.
func LiveHolder(l *scanner.Lock, id string) (h scanner.SharedHolder, ok bool) {
	if l.Shared == nil {
		return h, false
	}
	for _, o := range l.Shared.Holders {
		if o.ID == id && !o.Expired && (!ok || o.Mode == protocol.ModeWrite) {
			h, ok = o, true
		}
	}
	return h, ok
}

// SeenFor is ReleaseHolder's seen for holder h of shared lock l as the scanner read it (what
// the operator saw in the console): the compare then removes the holder only if it still
// holds exactly that. A holder is its ID in every mode (the scanner lists a writer that also
// holds read levels, a downgrade, once per mode): all of them are released together.
// ErrNoHolders for a Redisson RSemaphore; ErrInexactValue where the census read the holders
// in part (Shared.Truncated: PeekHolders reads them in full) or h holds nothing any more.
func SeenFor(l *scanner.Lock, h scanner.SharedHolder) (string, error) {
	s := l.Shared
	switch {
	case s == nil:
		return "", fmt.Errorf("%w: %s", ErrNotShared, l.Key)
	case s.HoldersUnknown:
		return "", ErrNoHolders
	case s.Truncated:
		return "", fmt.Errorf("%w: %s has more holders than the census read", ErrInexactValue, l.Key)
	case h.Expired:
		return "", fmt.Errorf("%w: holder %s of %s has expired: it holds nothing", ErrInexactValue, h.ID, l.Key)
	}
	var same []scanner.SharedHolder // h in every mode
	for _, o := range s.Holders {
		if o.ID == h.ID {
			same = append(same, o)
		}
	}
	if len(same) == 0 {
		return "", fmt.Errorf("%w: %s has no holder %q", ErrInexactValue, l.Key, h.ID)
	}
	switch {
	case l.Type == "zset":
		var members []string
		for _, o := range same {
			for _, lease := range o.Leases {
				if lease.TTL > 0 { // an expired member is no level: the script drops it first
					members = append(members, lease.Member)
				}
			}
		}
		slices.Sort(members)
		return strings.Join(members, "\n"), nil
	case l.Type == "hash":
		fields := map[string]string{"mode": "read"}
		if s.Mode == protocol.ModeWrite {
			fields["mode"] = "write"
		}
		for _, o := range same {
			fields[o.Field] = strconv.Itoa(o.Count)
		}
		return CanonicalHash(fields), nil
	case h.Mode == protocol.ModePermit && len(h.Leases) == 1:
		return h.ID + " " + strconv.FormatInt(h.Leases[0].Deadline, 10), nil
	}
	return "", fmt.Errorf("%w: holder %s of %s", ErrInexactValue, h.ID, l.Key)
}
