package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
)

// AuditRecord is one entry of the audit trail. On a Redlock target each record is written to
// every instance; Audit merges the copies by ActionID.
//
// Stream fields (one XADD per action and instance): time (RFC 3339, UTC, ns), operator, action,
// key, holder (release-holder only), keys (release-together only: a JSON array), seen,
// result, reason, ttl_ms (extend only), error (failed only), instances (per-instance
// outcomes, multi-instance targets only), action_id.
type AuditRecord struct {
	ID        string        // stream entry ID (of the first instance it was read from)
	ActionID  string        // random id shared by the copies of one action
	Time      time.Time     // when the action was attempted
	Operator  string        // who acted (Options.Operator)
	Action    Action        // release or extend
	Key       string        // the lock key
	Holder    string        // release-holder: the holder's ID
	Keys      []string      // release-together: every key
	Seen      string        // the value the operator expected (cut at MaxAuditValue bytes)
	Result    Outcome       // the aggregate outcome (Failed when nothing could be decided)
	Error     string        // Failed: why
	Reason    string        // as given by the operator
	TTL       time.Duration // extend: the TTL asked for
	Instances string        // multi-instance targets: "addr=outcome" per instance, space separated
	Sources   []string      // addresses of the servers this record was read from (on a cluster, the master holding the stream)
}

// The outcomes of attempts that stopped before their script ran (RecordStopped); besides these,
// such an attempt records AlreadyGone, NotALock or Failed when the read before the question found
// the key gone, of another type, or could not read it.
const (
	Declined   Outcome = "declined"    // the operator answered No: nothing was changed
	NoTerminal Outcome = "no_terminal" // nobody could confirm (no terminal, no --yes): nothing was changed
)

// MaxAuditValue caps the value copied into an audit record, so a huge lock value cannot bloat
// the stream; longer values end with a marker saying how much was cut.
const MaxAuditValue = 4096

// DefaultAuditLimit is how many records Audit returns when limit <= 0.
const DefaultAuditLimit = 100

// writeAudit appends one record for the action to the audit stream of every instance. It runs
// even when ctx is cancelled (the action may already have happened) and returns the joined
// errors of the instances where the write failed.
func (a *Admin) writeAudit(ctx context.Context, res Result, actionErr error, reason string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.InstanceTimeout)
	defer cancel()
	values := a.auditValues(res, actionErr, reason)
	errs := make([]error, len(a.target.Clients))
	var wg sync.WaitGroup
	for i, c := range a.target.Clients {
		wg.Go(func() {
			err := c.XAdd(ctx, &redis.XAddArgs{
				Stream: a.opts.AuditStream,
				MaxLen: a.opts.AuditMaxLen,
				Approx: true,
				Values: values,
			}).Err()
			if err != nil {
				errs[i] = fmt.Errorf("audit write to %s on %s: %w", a.opts.AuditStream, a.nodeAddr(ctx, i, a.opts.AuditStream), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RecordStopped writes the audit record of an attempt that stopped before its script ran
// (attempt's Action, Key, Seen, TTL and Outcome: Declined, NoTerminal, AlreadyGone, NotALock, or
// Failed with cause), so the trail holds every attempt, not only those that reached the lock.
// In read-only mode nothing is sent and it returns ErrReadOnly; otherwise the error is that of
// the audit write, as Result.AuditErr.
func (a *Admin) RecordStopped(ctx context.Context, attempt Result, cause error, reason string) error {
	if a.opts.ReadOnly {
		return ErrReadOnly
	}
	return a.writeAudit(ctx, attempt, cause, reason)
}

func (a *Admin) auditValues(res Result, actionErr error, reason string) []any {
	v := []any{
		"time", time.Now().UTC().Format(time.RFC3339Nano),
		"operator", a.opts.Operator,
		"action", string(res.Action),
		"key", res.Key,
		"seen", capValue(res.Seen),
		"result", string(Reported(res.Outcome, a.opts.TypedExpect)),
		"reason", reason,
		"action_id", newActionID(),
	}
	if res.Holder != "" {
		v = append(v, "holder", res.Holder)
	}
	if len(res.Keys) > 0 {
		keys, _ := json.Marshal(res.Keys) // keys may hold any byte: a JSON array keeps them apart
		v = append(v, "keys", string(keys))
	}
	if res.Action.Extends() {
		v = append(v, "ttl_ms", strconv.FormatInt(res.TTL.Milliseconds(), 10))
	}
	if actionErr != nil {
		v = append(v, "error", actionErr.Error())
	}
	if len(res.Instances) > 1 {
		parts := make([]string, len(res.Instances))
		for i, in := range res.Instances {
			parts[i] = in.Addr + "=" + string(Reported(in.Outcome, a.opts.TypedExpect))
		}
		v = append(v, "instances", strings.Join(parts, " "))
	}
	return v
}

func capValue(s string) string {
	if len(s) <= MaxAuditValue {
		return s
	}
	return s[:MaxAuditValue] + fmt.Sprintf("…(+%d bytes)", len(s)-MaxAuditValue)
}

func newActionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Audit returns the newest limit records of the audit trail, newest first (limit <= 0 means
// DefaultAuditLimit). On a Redlock target the instances' copies are merged. When some instance
// cannot be read, the records of the others are returned together with an error naming it;
// when none can, only the error.
func (a *Admin) Audit(ctx context.Context, limit int) ([]AuditRecord, error) {
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	perInstance := make([][]redis.XMessage, len(a.target.Clients))
	errs := make([]error, len(a.target.Clients))
	sources := make([]string, len(a.target.Clients))
	var wg sync.WaitGroup
	for i, c := range a.target.Clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, a.opts.InstanceTimeout)
			defer cancel()
			sources[i] = a.nodeAddr(ctx, i, a.opts.AuditStream)
			msgs, err := c.XRevRangeN(ctx, a.opts.AuditStream, "+", "-", int64(limit)).Result()
			if err != nil {
				errs[i] = fmt.Errorf("audit read of %s on %s: %w", a.opts.AuditStream, sources[i], err)
				return
			}
			perInstance[i] = msgs
		})
	}
	wg.Wait()

	byAction := map[string]int{} // ActionID -> index in records
	var records []AuditRecord
	answered := 0
	for i, msgs := range perInstance {
		if errs[i] != nil {
			continue
		}
		answered++
		for _, m := range msgs {
			r := recordFrom(m)
			if at, seen := byAction[r.ActionID]; seen && r.ActionID != "" {
				records[at].Sources = append(records[at].Sources, sources[i])
				continue
			}
			r.Sources = []string{sources[i]}
			byAction[r.ActionID] = len(records)
			records = append(records, r)
		}
	}
	err := errors.Join(errs...)
	if answered == 0 && err != nil {
		return nil, err
	}
	slices.SortStableFunc(records, func(x, y AuditRecord) int { return y.Time.Compare(x.Time) })
	if len(records) > limit {
		records = records[:limit]
	}
	return records, err
}

// nodeAddr is the display address of the server of client i that holds key: on a cluster the
// master owning its slot (the seed's address when the slot map cannot be read), else addr(i).
func (a *Admin) nodeAddr(ctx context.Context, i int, key string) string {
	if cc, ok := a.target.Clients[i].(*redis.ClusterClient); ok && a.target.Mode == connect.Cluster {
		if node, err := cc.MasterForKey(ctx, key); err == nil {
			return node.Options().Addr
		}
	}
	return a.addr(i)
}

func recordFrom(m redis.XMessage) AuditRecord {
	field := func(name string) string {
		s, _ := m.Values[name].(string)
		return s
	}
	r := AuditRecord{
		ID:        m.ID,
		ActionID:  field("action_id"),
		Operator:  field("operator"),
		Action:    Action(field("action")),
		Key:       field("key"),
		Holder:    field("holder"),
		Seen:      field("seen"),
		Result:    Outcome(field("result")),
		Error:     field("error"),
		Reason:    field("reason"),
		Instances: field("instances"),
	}
	if keys := field("keys"); keys != "" {
		_ = json.Unmarshal([]byte(keys), &r.Keys) // a record in no known form keeps none
	}
	r.Time, _ = time.Parse(time.RFC3339Nano, field("time"))
	if ms, err := strconv.ParseInt(field("ttl_ms"), 10, 64); err == nil {
		r.TTL = time.Duration(ms) * time.Millisecond
	}
	return r
}
