package actions

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed holder.lua
	holderLua string
	//go:embed release.lua
	releaseLua string
	//go:embed redisson.lua
	redissonLua string
	//go:embed extend.lua
	extendLua string

	// release.lua wakes locklib's waiters with the protocol's own Lua (wakeLiveHead), and
	// Redisson's as Redisson does (redisson.lua).
	releaseSource = protocol.LuaLibrary() + holderLua + "\n" + redissonLua + "\n" + releaseLua
	extendSource  = holderLua + "\n" + extendLua
	releaseScript = redis.NewScript(releaseSource)
	extendScript  = redis.NewScript(extendSource)
)

// Release deletes key on every instance where it still holds exactly expect (compare-and-delete
// in one Lua script per instance) and writes one audit record. reason is recorded as given.
//
// The error is non-nil only when nothing could be decided: ErrReadOnly, ErrBadRequest, or every
// instance failed (the first instance's error, wrapped). Instance failures next to instances
// that answered are in Result.Instances (see Result.Partial).
func (a *Admin) Release(ctx context.Context, key, expect, reason string) (Result, error) {
	return a.act(ctx, ActionRelease, key, expect, 0, false, reason)
}

// Extend sets the TTL of key to ttl on every instance where it still holds exactly expect
// (compare-and-PEXPIRE) and writes one audit record. Errors as for Release. It never shortens:
// where the key has more than ttl left (or no expiry), it is left as it is and the outcome is
// WouldShorten; ExtendAllowingShorten is the explicit way to cut a lock's time.
func (a *Admin) Extend(ctx context.Context, key, expect string, ttl time.Duration, reason string) (Result, error) {
	return a.extend(ctx, key, expect, ttl, reason, false)
}

// ExtendAllowingShorten is Extend that also sets a TTL below the one the key has left (or gives a
// key without expiry a TTL): for an operator who confirmed that the lock's time is cut.
func (a *Admin) ExtendAllowingShorten(ctx context.Context, key, expect string, ttl time.Duration, reason string) (Result, error) {
	return a.extend(ctx, key, expect, ttl, reason, true)
}

func (a *Admin) extend(ctx context.Context, key, expect string, ttl time.Duration, reason string, allowShorten bool) (Result, error) {
	if ttl < time.Millisecond {
		return Result{Action: ActionExtend, Key: key, Seen: expect, TTL: ttl},
			fmt.Errorf("%w: extend needs a TTL of at least 1ms, got %v", ErrBadRequest, ttl)
	}
	return a.act(ctx, ActionExtend, key, expect, ttl, allowShorten, reason)
}

func (a *Admin) act(ctx context.Context, action Action, key, expect string, ttl time.Duration, allowShorten bool, reason string) (Result, error) {
	res := Result{Action: action, Key: key, Seen: expect, TTL: ttl}
	if a.opts.ReadOnly {
		return res, ErrReadOnly
	}
	if key == "" {
		return res, fmt.Errorf("%w: empty key", ErrBadRequest)
	}
	script, source, success := releaseScript, releaseSource, Released
	keys, args := []string{key}, scriptArgs(expect, ttl)
	if action == ActionExtend {
		script, source, success = extendScript, extendSource, Extended
		// On a cluster, companions outside key's slot would make Redis refuse the script (as for
		// wakeKeys); locklib could not have written them there either.
		if a.target.Mode != connect.Cluster || protocol.CompanionsInSlot(key) {
			keys = append(keys, protocol.LevelsKey(key), protocol.FenceKey(key))
		}
		args = append(args, strconv.FormatBool(allowShorten))
	} else {
		// Only a hash (args[2]: its field count) can be Redisson's lock.
		keys = append(keys, wakeKeys(key, a.target.Mode == connect.Cluster, args[2] != "0")...)
	}

	err := a.runEverywhere(ctx, &res, script, source, success, keys, args, reason)
	return res, err
}

// runEverywhere runs script on every instance in parallel (keys[0] routes it on a cluster),
// fills in res's per-instance and aggregate outcomes, writes the action's audit record, and
// returns aggregate's error.
func (a *Admin) runEverywhere(ctx context.Context, res *Result, script *redis.Script, source string, success Outcome, keys []string, args []any, reason string) error {
	res.Instances = make([]InstanceResult, len(a.target.Clients))
	var wg sync.WaitGroup
	for i, c := range a.target.Clients {
		wg.Go(func() {
			res.Instances[i] = a.runOn(ctx, c, a.nodeAddr(ctx, i, keys[0]), script, source, success, keys, args)
		})
	}
	wg.Wait()
	err := aggregate(res, success)
	res.AuditErr = a.writeAudit(ctx, *res, err, reason)
	return err
}

// withLocklibWakeKeys is how many of a release's keys are key and locklib's (wakeKeys' first three).
const withLocklibWakeKeys = 4

// wakeKeys are the keys release.lua needs besides key to wake its waiters (KEYS[2..6]:
// locklib's wait queue, presence and levels, Redisson's fair queue and deadlines). Redisson's
// are named only for a hash, the only kind of lock Redisson writes, so that an ACL written for
// locklib's layout keeps every other release's wake-ups. On a cluster only those in key's slot
// are named: Redis refuses a script whose keys span slots, which would refuse the release
// itself. A key with a '}' but no hash tag has its locklib companions in another slot, one with
// a '{' but no hash tag its Redisson ones (their namings differ); in both namings the rest share
// key's slot.
func wakeKeys(key string, cluster, hash bool) []string {
	if cluster && !protocol.CompanionsInSlot(key) {
		return nil
	}
	keys := []string{protocol.WaitQueueKey(key), protocol.WaitPresenceKey(key), protocol.LevelsKey(key)}
	if !hash || cluster && !scanner.RedissonCompanionsInSlot(key) {
		return keys
	}
	return append(keys, scanner.RedissonQueueKey(key), scanner.RedissonTimeoutKey(key))
}

// isReentrantLockscope reports whether expect is a re-entrant locklib value (it has a count).
func isReentrantLockscope(expect any) bool {
	s, ok := expect.(string)
	if !ok {
		return false
	}
	v, err := protocol.ParseValue(s)
	return err == nil && v.Count > 0
}

// scriptArgs builds ARGV as holder.lua documents it. An expected hash is its canonical form,
// or its field=value lines as ls and show print it; the script compares a string lock with
// the raw text either way, so the pairs cannot make a string match.
func scriptArgs(expect string, ttl time.Duration) []any {
	args := []any{expect, strconv.FormatInt(ttl.Milliseconds(), 10)}
	fields, isHash := ParseCanonicalHash(expect)
	if !isHash {
		fields, isHash = parseHashLines(expect)
	}
	if !isHash || len(fields) == 0 {
		return append(args, "0")
	}
	args = append(args, strconv.Itoa(len(fields)))
	for f, v := range fields {
		args = append(args, f, v)
	}
	return args
}

func (a *Admin) runOn(ctx context.Context, c redis.UniversalClient, addr string, script *redis.Script, source string, success Outcome, keys []string, args []any) InstanceResult {
	ctx, cancel := context.WithTimeout(ctx, a.opts.InstanceTimeout)
	defer cancel()
	out := InstanceResult{Addr: addr}
	reply, err := script.Run(ctx, c, keys, args...).Slice()
	if (script == releaseScript || script == extendScript) && len(keys) > 1 && isKeyPermissionError(err) {
		// The user may not touch the companion keys (an ACL key pattern like ~lock:*), and
		// Redis refused the whole script for them before running it: act with fewer of them
		// (a release without some wake-ups), unless that would break the lock. (The scripts
		// of shared and multi-key locks need every key they name.)
		if script == extendScript && isReentrantLockscope(args[0]) {
			out.Outcome, out.Err = Failed, fmt.Errorf("actions: %s is a re-entrant lockscope lock, whose levels (%s) must live as long as it: "+
				"this user may not write them (ACL), so it is not extended", keys[0], keys[1])
			return out
		}
		// Without Redisson's keys first (an ACL written for locklib's still wakes its waiters),
		// then on the key alone.
		for _, n := range []int{withLocklibWakeKeys, 1} {
			if n < len(keys) && isKeyPermissionError(err) {
				reply, err = script.Run(ctx, c, keys[:n], args...).Slice()
			}
		}
	}
	if err != nil {
		out.Outcome, out.Err = Failed, explainScriptError(err, source)
		return out
	}
	status, current, err := decodeReply(reply)
	if err != nil {
		out.Outcome, out.Err = Failed, err
		return out
	}
	switch status {
	case "match":
		out.Outcome = success
	case "other":
		out.Outcome, out.Current = ChangedHands, current
	case "gone":
		out.Outcome = AlreadyGone
	case "type":
		out.Outcome, out.Current = NotALock, current
	case "longer":
		out.Outcome = WouldShorten
		if out.TTLLeft, err = scriptTTLLeft(current); err != nil {
			out.Outcome, out.Err = Failed, err
		}
	default:
		out.Outcome, out.Err = Failed, fmt.Errorf("actions: unexpected script status %q", status)
	}
	return out
}

// scriptTTLLeft reads extend.lua's PTTL of a key that would be shortened (-1: no expiry).
func scriptTTLLeft(ms string) (time.Duration, error) {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("actions: unexpected TTL %q from the extend script", ms)
	}
	if n < 0 {
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// decodeReply reads {status, current} where current is a string or HGETALL's flat array.
func decodeReply(reply []any) (status, current string, err error) {
	if len(reply) != 2 {
		return "", "", fmt.Errorf("actions: unexpected script reply of %d elements", len(reply))
	}
	status, _ = reply[0].(string)
	switch v := reply[1].(type) {
	case string:
		return status, v, nil
	case []any:
		return status, canonicalFromFlat(v), nil
	case nil:
		return status, "", nil
	}
	return "", "", fmt.Errorf("actions: unexpected script reply element %T", reply[1])
}

func canonicalFromFlat(flat []any) string {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[fmt.Sprint(flat[i])] = fmt.Sprint(flat[i+1])
	}
	return CanonicalHash(m)
}

// aggregate sets res.Outcome and res.Current from the instances (rules in Result's doc) and
// returns an error only when no instance answered.
func aggregate(res *Result, success Outcome) error {
	var firstErr error
	var hit, gone bool
	var changedTo, notLockType *string
	var longer *time.Duration
	for i := range res.Instances {
		in := &res.Instances[i]
		switch in.Outcome {
		case success:
			hit = true
		case ChangedHands:
			if changedTo == nil {
				changedTo = &in.Current
			}
		case NotALock:
			if notLockType == nil {
				notLockType = &in.Current
			}
		case WouldShorten:
			if longer == nil {
				longer = &in.TTLLeft
			}
		case AlreadyGone:
			gone = true
		case Failed:
			if firstErr == nil {
				firstErr = fmt.Errorf("%s %s on %s: %w", res.Action, res.Key, in.Addr, in.Err)
			}
		}
	}
	if changedTo != nil {
		res.Current = *changedTo
	} else if notLockType != nil {
		res.Current = *notLockType
	}
	switch {
	case hit:
		res.Outcome = success
	case changedTo != nil:
		res.Outcome = ChangedHands
	case notLockType != nil:
		res.Outcome = NotALock
	case longer != nil:
		res.Outcome, res.TTLLeft = WouldShorten, *longer
	case gone:
		res.Outcome = AlreadyGone
	default:
		res.Outcome = Failed
		if firstErr == nil {
			firstErr = errors.New("actions: the target has no instances")
		}
		return firstErr
	}
	return nil
}

func (a *Admin) addr(i int) string {
	if addr := a.target.ServerAddr(i); addr != "" {
		return addr
	}
	return "instance-" + strconv.Itoa(i+1)
}
