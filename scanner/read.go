package scanner

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// instRead is what one server said about one key.
type instRead struct {
	present   bool
	pttl      time.Duration // -1: no expiry
	typ       string        // "" when the value could not be read
	value     string
	truncated bool
	fields    []hashField // hashes
	// Sorted sets that are lease sets (decodeLeaseSet): their first members (membersCut:
	// there are more), the server's clock at the read (unix ms), the semaphore limit
	// (protocol.LimitKey, "" when absent) and the wait queue's first entries.
	members    []redis.Z
	membersCut bool
	nowMs      int64
	limit      string
	queue      []string
	fence      int64
	hasFence   bool
	waiters    int
	hasWaiters bool
}

// readKind names a read the scanner may lose permission for; each gets one warning.
type readKind int

const (
	readValue readKind = iota
	readFence
	readWaiters
	readLeases
	readKinds
)

// deniedWarnings name the companion keys as protocol names those of a lock key "...".
var deniedWarnings = [readKinds]string{
	readValue:   "no permission to read lock values (GETRANGE): holders, fencing tokens and waiters unknown; the census shows keys and TTLs only",
	readFence:   "no permission to read fence keys (GET " + protocol.FenceKey("...") + "): fencing tokens unknown",
	readWaiters: "no permission to read wait queues (ZCARD " + protocol.WaitQueueKey("...") + "): waiter counts unknown",
	readLeases:  "no permission to read sorted sets (ZRANGE): read-write locks and semaphores of lockscope are shown as unknown",
}

// companionReads says which companion keys a batch of reads asks for with its locks.
type companionReads struct {
	fences, queues bool
}

// denials remembers, for one pass, which reads the server refused with NOPERM, so the rest
// of the pass skips them instead of asking a million times.
type denials [readKinds]atomic.Bool

// companions reads the fence counters and wait queues of a batch on one server in two
// commands (MGET, EXISTS) instead of two per key: most locks have no waiters, so the
// per-key ZCARD round runs only when EXISTS counts some.
type companions struct {
	fences *redis.SliceCmd
	queues *redis.IntCmd
}

// keyReader reads batches of keys on one server. On a standalone server (or a Redlock
// instance) it keeps its PTTL and GETRANGE commands from one batch to the next and only
// swaps their key argument: go-redis allocates a command, its argument slice and its boxed
// arguments per call, which for a million keys was most of the census's garbage and a
// third of its CPU. A cluster client caches each command's hash slot inside the command,
// so there (and for any other client type) every batch gets fresh commands. A keyReader
// serves one goroutine at a time.
type keyReader struct {
	reuse   bool // a plain *redis.Client: commands are kept from batch to batch
	cluster bool // companions are read key by key (multi-key commands would span slots)
	pttl    []*redis.DurationCmd
	value   []*redis.StringCmd
	queue   []redis.Cmder
	reads   []instRead
}

func newKeyReader(rdb redis.Cmdable) *keyReader {
	_, plain := rdb.(*redis.Client)
	_, cluster := rdb.(*redis.ClusterClient)
	return &keyReader{reuse: plain, cluster: cluster}
}

// commands prepares PTTL (and GETRANGE 0 ValueCap when values are read) for keys.
func (kr *keyReader) commands(ctx context.Context, keys []string, readValues bool) []redis.Cmder {
	if !kr.reuse {
		kr.pttl, kr.value = kr.pttl[:0], kr.value[:0]
	}
	for len(kr.pttl) < len(keys) {
		kr.pttl = append(kr.pttl, redis.NewDurationCmd(ctx, time.Millisecond, "pttl", nil))
		// One byte more than the cap: tells truncation.
		kr.value = append(kr.value, redis.NewStringCmd(ctx, "getrange", nil, 0, ValueCap))
	}
	kr.queue = kr.queue[:0]
	for i := range keys {
		// go-redis writes a *string argument as the string: no boxing (an allocation) per
		// key. keys stay unchanged until the pipeline has run.
		key := &keys[i]
		kr.pttl[i].Args()[1] = key
		kr.queue = append(kr.queue, kr.pttl[i])
		if readValues {
			kr.value[i].Args()[1] = key
			kr.queue = append(kr.queue, kr.value[i])
		}
	}
	return kr.queue
}

// results returns a zeroed slice for n keys' reads, reused from batch to batch.
func (kr *keyReader) results(n int) []instRead {
	if cap(kr.reads) < n {
		kr.reads = make([]instRead, n)
	}
	kr.reads = kr.reads[:n]
	clear(kr.reads)
	return kr.reads
}

// readKeys reads keys on one server in one pipeline (plus small ones for keys that are not
// strings and for wait queues). On a cluster multi-key commands would span slots, so
// companions are read key by key there. reads says which of them to read (the rest
// are left to the caller: a census finds them with its SCAN). warn reports a refused read
// once. The result is valid until the keyReader's next batch.
func (kr *keyReader) readKeys(ctx context.Context, rdb redis.Cmdable, keys []string, hashCap int, reads companionReads, denied *denials, warn func(string)) ([]instRead, error) {
	perKey := kr.cluster
	readValues, readFences, readQueues := !denied[readValue].Load(), !denied[readFence].Load(), !denied[readWaiters].Load()
	readFences, readQueues = readFences && reads.fences, readQueues && reads.queues
	var fenceKeys, queueKeys []string
	if !perKey {
		fenceKeys, queueKeys = companionKeys(keys, readFences, readQueues)
	}
	pipe := rdb.Pipeline()
	if err := pipe.BatchProcess(ctx, kr.commands(ctx, keys, readValues)...); err != nil {
		return nil, err
	}
	var fences []*redis.StringCmd
	var waiters []*redis.IntCmd
	if perKey && readFences {
		fences = make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			fences[i] = pipe.Get(ctx, protocol.FenceKey(k))
		}
	}
	if perKey && readQueues {
		waiters = make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			waiters[i] = pipe.ZCard(ctx, protocol.WaitQueueKey(k))
		}
	}
	var batch companions
	if fenceKeys != nil {
		batch.fences = pipe.MGet(ctx, fenceKeys...)
	}
	if queueKeys != nil {
		batch.queues = pipe.Exists(ctx, queueKeys...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return nil, err
	}
	out := kr.results(len(keys))
	var others []int // keys whose value is not a string
	var refused [readKinds]bool
	for i := range keys {
		r := &out[i]
		pttl := kr.pttl[i]
		if err := pttl.Err(); err != nil {
			return nil, replyErr("PTTL", err)
		}
		r.pttl = pttl.Val()
		if r.pttl == -2 {
			continue // vanished since SCAN: not a lock any more
		}
		r.present = true
		if readValues {
			switch v, err := kr.value[i].Result(); {
			case err == nil:
				r.typ = "string"
				r.value, r.truncated = capValue(v)
			case isWrongType(err):
				others = append(others, i)
			case isNoPerm(err):
				refused[readValue] = true
			default:
				return nil, replyErr("GETRANGE", err)
			}
		}
		var err error
		if fences != nil {
			if r.fence, r.hasFence, err = fenceReply(fences[i], &refused); err != nil {
				return nil, err
			}
		}
		if waiters != nil {
			if r.waiters, r.hasWaiters, err = waitersReply(waiters[i], &refused); err != nil {
				return nil, err
			}
		}
	}
	if err := batch.apply(ctx, rdb, queueKeys, out, &refused); err != nil {
		return nil, err
	}
	noteRefusals(denied, refused, warn)
	if len(others) > 0 {
		if err := readOthers(ctx, rdb, keys, others, out, hashCap, denied, warn); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fenceReply reads the GET of a fence key: the token when there is one. An absent key (or one
// of another type) has none; a refused read is noted in refused.
func fenceReply(c *redis.StringCmd, refused *[readKinds]bool) (fence int64, has bool, err error) {
	switch v, err := c.Result(); {
	case err == nil:
		fence, has = parseFence(v)
		return fence, has, nil
	case err == redis.Nil || isWrongType(err):
	case isNoPerm(err):
		refused[readFence] = true
	default:
		return 0, false, replyErr("GET", err)
	}
	return 0, false, nil
}

// waitersReply reads the ZCARD of a wait queue; known is false when it could not be read as
// one (another type, or refused: noted in refused).
func waitersReply(c *redis.IntCmd, refused *[readKinds]bool) (n int, known bool, err error) {
	switch card, err := c.Result(); {
	case err == nil:
		return int(card), true, nil
	case isWrongType(err):
	case isNoPerm(err):
		refused[readWaiters] = true
	default:
		return 0, false, replyErr("ZCARD", err)
	}
	return 0, false, nil
}

func companionKeys(keys []string, fences, queues bool) (fenceKeys, queueKeys []string) {
	if fences {
		fenceKeys = make([]string, len(keys))
		for i, k := range keys {
			fenceKeys[i] = protocol.FenceKey(k)
		}
	}
	if queues {
		queueKeys = make([]string, len(keys))
		for i, k := range keys {
			queueKeys[i] = protocol.WaitQueueKey(k)
		}
	}
	return fenceKeys, queueKeys
}

// apply copies the batch's fence counters and wait-queue sizes into out. Only when EXISTS
// found wait queues does it ask ZCARD, for every present key of the batch.
func (b companions) apply(ctx context.Context, rdb redis.Cmdable, queueKeys []string, out []instRead, refused *[readKinds]bool) error {
	if b.fences != nil {
		switch vals, err := b.fences.Result(); {
		case err == nil:
			for i, v := range vals {
				if s, ok := v.(string); ok && out[i].present {
					out[i].fence, out[i].hasFence = parseFence(s)
				}
			}
		case isNoPerm(err):
			refused[readFence] = true
		default:
			return replyErr("MGET", err)
		}
	}
	if b.queues == nil {
		return nil
	}
	n, err := b.queues.Result()
	switch {
	case isNoPerm(err):
		refused[readWaiters] = true
		return nil
	case err != nil:
		return replyErr("EXISTS", err)
	}
	for i := range out {
		out[i].hasWaiters = out[i].present // EXISTS = 0: nobody waits on any of them
	}
	if n == 0 {
		return nil
	}
	pipe := rdb.Pipeline()
	cards := make([]*redis.IntCmd, len(out))
	for i := range out {
		if out[i].present {
			cards[i] = pipe.ZCard(ctx, queueKeys[i])
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	for i, c := range cards {
		if c == nil {
			continue
		}
		switch v, err := c.Result(); {
		case err == nil:
			out[i].waiters = int(v)
		case isWrongType(err):
			out[i].hasWaiters = false
		default:
			return replyErr("ZCARD", err)
		}
	}
	return nil
}

// readOthers asks TYPE for keys that are not strings and reads hashes (HSCAN COUNT hashCap:
// a capped HGETALL that a huge hash cannot turn into a huge reply); sorted sets are read
// after it (readSortedSets). A refused read leaves the key's value unknown.
func readOthers(ctx context.Context, rdb redis.Cmdable, keys []string, idx []int, out []instRead, hashCap int, denied *denials, warn func(string)) error {
	types := make([]*redis.StatusCmd, len(idx))
	scans := make([]*redis.ScanCmd, len(idx))
	pipe := rdb.Pipeline()
	for j, i := range idx {
		types[j] = pipe.Type(ctx, keys[i])
		scans[j] = pipe.HScan(ctx, keys[i], 0, "", int64(hashCap))
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	var zsets []int
	for j, i := range idx {
		typ, err := types[j].Result()
		switch {
		case isNoPerm(err):
			deny(denied, readValue, warn)
			continue
		case err != nil:
			return replyErr("TYPE", err)
		}
		r := &out[i]
		if typ == "none" { // deleted between the two pipelines
			*r = instRead{}
			continue
		}
		r.typ = typ
		if typ == "zset" {
			zsets = append(zsets, i)
		}
		if typ != "hash" {
			continue
		}
		kv, cursor, err := scans[j].Result()
		switch {
		case isNoPerm(err):
			deny(denied, readValue, warn)
			r.typ = ""
			continue
		case err != nil:
			return replyErr("HSCAN", err)
		}
		r.fields = pairs(kv, hashCap)
		r.value, r.truncated = hashText(r.fields)
		r.truncated = r.truncated || cursor != 0 || len(kv)/2 > hashCap
	}
	if len(zsets) == 0 || denied[readLeases].Load() {
		return nil
	}
	return readSortedSets(ctx, rdb, keys, zsets, out, hashCap, denied, warn)
}

// readSortedSets reads the sorted sets among the keys, in case they are lease sets: the first
// hashCap members (ZRANGE, one more to tell the cut: a huge set cannot make a huge reply),
// with the server's clock, a semaphore's limit and the wait queue's first hashCap entries
// (whose modes say who waits for what), in one pipeline. A refused ZRANGE leaves the key
// unknown (one warning); a refused limit or queue leaves them unknown.
func readSortedSets(ctx context.Context, rdb redis.Cmdable, keys []string, idx []int, out []instRead, hashCap int, denied *denials, warn func(string)) error {
	ranges := make([]*redis.ZSliceCmd, len(idx))
	limits := make([]*redis.StringCmd, len(idx))
	queues := make([]*redis.StringSliceCmd, len(idx))
	pipe := rdb.Pipeline()
	clock := pipe.Time(ctx)
	for j, i := range idx {
		ranges[j] = pipe.ZRangeWithScores(ctx, keys[i], 0, int64(hashCap))
		limits[j] = pipe.Get(ctx, protocol.LimitKey(keys[i]))
		queues[j] = pipe.ZRange(ctx, protocol.WaitQueueKey(keys[i]), 0, int64(hashCap)-1)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReply(err) {
		return err
	}
	nowMs := time.Now().UnixMilli() // a server that refuses TIME: the local clock
	if t, err := clock.Result(); err == nil {
		nowMs = t.UnixMilli()
	}
	for j, i := range idx {
		r := &out[i]
		members, err := ranges[j].Result()
		switch {
		case isNoPerm(err):
			deny(denied, readLeases, warn)
			r.typ = ""
			continue
		case isWrongType(err): // replaced since TYPE: the next read tells
			continue
		case err != nil:
			return replyErr("ZRANGE", err)
		}
		r.members, r.membersCut, r.nowMs = members[:min(len(members), hashCap)], len(members) > hashCap, nowMs
		r.limit, r.queue = limits[j].Val(), queues[j].Val()
	}
	return nil
}

func pairs(kv []string, limit int) []hashField {
	n := len(kv) / 2
	if n > limit {
		n = limit
	}
	fields := make([]hashField, n)
	for i := range fields {
		fields[i] = hashField{Name: kv[2*i], Value: kv[2*i+1]}
	}
	return fields
}

// capValue cuts a GETRANGE 0 ValueCap answer (ValueCap+1 bytes at most) to ValueCap.
func capValue(v string) (string, bool) {
	if len(v) > ValueCap {
		return v[:ValueCap], true
	}
	return v, false
}

func parseFence(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// noteRefusals records the reads Redis refused. A user who may not read values is a
// metadata-only user: one warning says so, and fences and wait queues are not tried either.
func noteRefusals(denied *denials, refused [readKinds]bool, warn func(string)) {
	if refused[readValue] {
		denied[readFence].Store(true)
		denied[readWaiters].Store(true)
		deny(denied, readValue, warn)
		return
	}
	for kind, no := range refused {
		if no {
			deny(denied, readKind(kind), warn)
		}
	}
}

func deny(denied *denials, kind readKind, warn func(string)) {
	if denied[kind].CompareAndSwap(false, true) {
		warn(deniedWarnings[kind])
	}
}

// isReply reports whether err is an answer from Redis (a reply error or nil), as opposed to a
// transport failure that is worth retrying.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }
func isNoPerm(err error) bool    { return err != nil && strings.HasPrefix(err.Error(), "NOPERM") }

// replyErr wraps an unexpected reply error (or a transport error) with the command.
func replyErr(cmd string, err error) error {
	return &CommandError{Command: cmd, Err: err}
}

// CommandError is a Redis command that failed in a way the scanner cannot work around,
// e.g. NOPERM for SCAN or PTTL. Err is the error from Redis.
type CommandError struct {
	Command string
	Err     error
}

func (e *CommandError) Error() string { return "scanner: " + e.Command + ": " + e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }
