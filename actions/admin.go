// Package actions holds lockscope's admin operations on live locks: force-release and extend,
// both compare-and-act in Lua (never blind), and the audit trail they write to a Redis stream.
// The CLI and the TUI call the same code.
//
// Every action names the value the operator saw (expect). The script deletes or re-times the
// key only if it still holds exactly that value, in the same atomic step, so a lock that changed
// hands after the operator looked is never touched. Hash locks (Redisson) are compared field by
// field against their canonical form (see CanonicalHash). On a Redlock target the action runs
// on every instance in parallel and the result is reported per instance.
//
// The expect argument must be the lock's exact value: Holding.Value from Peek (read in full), or
// ExpectFor(lock) for a scanner record (a census caps values at 4 KiB and renders hashes in
// another layout, so Lock.Value itself does not always match).
package actions

import (
	"errors"
	"time"

	"github.com/lockscope/lockscope/connect"
)

// ErrReadOnly is returned by every mutating method of an Admin made with Options.ReadOnly.
// Nothing is sent to Redis, not even an audit record.
var ErrReadOnly = errors.New("actions: refused: read-only mode")

// ErrBadRequest is returned for an action that cannot be attempted as asked (empty key,
// non-positive TTL). Nothing is sent to Redis.
var ErrBadRequest = errors.New("actions: bad request")

// Defaults of Options.
const (
	DefaultAuditStream     = "lockscope:audit"
	DefaultAuditMaxLen     = 10000
	DefaultInstanceTimeout = 3 * time.Second
)

// Options configure an Admin. The zero value is usable: operator from DefaultOperator,
// stream lockscope:audit capped near 10000 entries, writes allowed.
type Options struct {
	Operator        string        // who acts, recorded in the audit trail; default DefaultOperator()
	AuditStream     string        // stream key of the audit trail; default DefaultAuditStream
	AuditMaxLen     int64         // approximate cap of the stream (XADD MAXLEN ~); default DefaultAuditMaxLen
	ReadOnly        bool          // refuse Release and Extend with ErrReadOnly
	TypedExpect     bool          // Release and Extend are given the operator's --expect: audited as Reported says
	InstanceTimeout time.Duration // per-instance bound of each call; default DefaultInstanceTimeout
}

// Admin performs admin actions on one target. It is safe for concurrent use.
type Admin struct {
	target connect.Target
	opts   Options
}

// New returns an Admin acting on t. It does not own t's clients (it never closes them).
func New(t connect.Target, o Options) *Admin {
	if o.Operator == "" {
		o.Operator = DefaultOperator()
	}
	if o.AuditStream == "" {
		o.AuditStream = DefaultAuditStream
	}
	if o.AuditMaxLen <= 0 {
		o.AuditMaxLen = DefaultAuditMaxLen
	}
	if o.InstanceTimeout <= 0 {
		o.InstanceTimeout = DefaultInstanceTimeout
	}
	return &Admin{target: t, opts: o}
}

// For is the Admin that acts on a lock read on server addr: on a target of independent
// servers, where a lock is a key on one server, an Admin of that server alone (no server when
// addr is not one of them: its actions fail); on any other target a itself.
func (a *Admin) For(addr string) *Admin {
	if a.target.Mode != connect.Independent {
		return a
	}
	one, _ := a.target.On(addr)
	return &Admin{target: one, opts: a.opts}
}

// Operator is the name recorded in audit records.
func (a *Admin) Operator() string { return a.opts.Operator }

// ReadOnly reports whether mutating actions are refused.
func (a *Admin) ReadOnly() bool { return a.opts.ReadOnly }

// Action names an admin action in results and audit records.
type Action string

// The actions.
const (
	ActionRelease Action = "release"
	ActionExtend  Action = "extend"
	// ActionReleaseHolder removes one holder of a lock several hold at once (ReleaseHolder).
	ActionReleaseHolder Action = "release-holder"
	// ActionExtendHolder re-times one holder of a lock several hold at once (ExtendHolder).
	ActionExtendHolder Action = "extend-holder"
	// ActionReleaseTogether deletes every key of a multi-key lock at once (ReleaseTogether).
	ActionReleaseTogether Action = "release-together"
)

// Extends reports whether the action sets a TTL (extend, extend-holder): its records carry it.
func (a Action) Extends() bool { return a == ActionExtend || a == ActionExtendHolder }

// Outcome is what an action did, overall or on one instance.
type Outcome string

// The outcomes. Released and Extended mean the compare matched and the key was deleted or
// re-timed; the others mean the key was left untouched.
const (
	Released     Outcome = "released"      // the expected value was deleted
	Extended     Outcome = "extended"      // the expected value got the new TTL
	ChangedHands Outcome = "changed_hands" // the key holds another value now (Current says which)
	AlreadyGone  Outcome = "already_gone"  // the key does not exist
	NotALock     Outcome = "not_a_lock"    // the key is a list, set, zset or stream: never touched
	WouldShorten Outcome = "would_shorten" // Extend: the key holds the value but has more than the TTL left (TTLLeft): untouched
	Failed       Outcome = "failed"        // the instance could not be asked (InstanceResult.Err)
)

// ValueDiffers is how ChangedHands is reported and recorded when the expected value was the
// operator's own (--expect, Options.TypedExpect), not one read just before: it may have been
// mistyped, so all that is known is that the key holds another value.
const ValueDiffers Outcome = "value_differs"

// Reported is o as it is reported and recorded: ChangedHands is ValueDiffers when the expected
// value was typed.
func Reported(o Outcome, typedExpect bool) Outcome {
	if o == ChangedHands && typedExpect {
		return ValueDiffers
	}
	return o
}

// Result is the outcome of one Release or Extend.
//
// Outcome aggregates the instances: Released/Extended when the compare matched on at least one
// instance; else ChangedHands when at least one instance holds another value; else NotALock when
// one holds a non-lock type; else WouldShorten when one would have had its TTL cut; else
// AlreadyGone when every instance that answered has no key.
// Instances always lists every instance (one for standalone and cluster targets).
type Result struct {
	Action    Action
	Key       string
	Holder    string   // ActionReleaseHolder, ActionExtendHolder: the holder's ID (scanner.SharedHolder.ID)
	Keys      []string // ActionReleaseTogether: every key (Key is the first)
	Outcome   Outcome
	Seen      string           // the expected value the action compared against
	Current   string           // the value held now where it differs (first such instance), else a NotALock key's type
	TTL       time.Duration    // Extend: the TTL that was asked for
	TTLLeft   time.Duration    // WouldShorten: what the key has left (first such instance); -1: no expiry
	Instances []InstanceResult // per instance, in target order
	// AuditErr is set when the audit record could not be written (on some instance). The
	// action's own outcome above is still true; callers must warn about it.
	AuditErr error
}

// InstanceResult is the outcome on one instance.
type InstanceResult struct {
	Addr    string        // display address (no credentials)
	Outcome Outcome       // Failed when Err is set
	Current string        // ChangedHands: the value held there; NotALock: the key's type
	TTLLeft time.Duration // WouldShorten: the TTL the key has there; -1: no expiry
	Err     error         // the call failed on this instance (unreachable, NOPERM, timeout, ...)
}

// Partial reports whether some instance failed while others answered.
func (r Result) Partial() bool {
	failed := 0
	for _, in := range r.Instances {
		if in.Err != nil {
			failed++
		}
	}
	return failed > 0 && failed < len(r.Instances)
}
