// Package libmetrics is what locklib's metrics adapters (locklib/extra/lockprom,
// locklib/extra/lockotel) share, so that both serve the same metrics from the same
// Observations: the metric names and buckets, the bounded name of a key, the bounded reason
// of an error, and Record, which turns one Observation into metric updates. It depends on
// nothing outside this repository, so the core module stays free of the adapters' libraries.
package libmetrics

import (
	"context"
	"errors"
	"time"

	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/locklib"
)

// Counter names one counter of the adapters (an index into Counters).
type Counter int

// The counters, in the order of Counters.
const (
	Obtained Counter = iota
	NotObtained
	BackendErrors
	Renewals
	RenewalFailures
	Lost
	Releases
)

// Histogram names one histogram (an index into Histograms).
type Histogram int

// The histograms, in the order of Histograms.
const (
	AcquireWait Histogram = iota
	Hold
)

// Spec describes one metric. Prometheus names it Prom; OpenTelemetry names it OTel with
// Unit, which an OTel-to-Prometheus exporter turns into Prom again (seconds, _total).
type Spec struct {
	Prom, OTel, Unit, Help string
	Label                  string    // the label besides "name" ("" for none)
	Buckets                []float64 // histograms: upper bounds in seconds
}

// NameLabel is the label (attribute) that carries a lock's bounded name.
const NameLabel = "name"

// Counters are the counters' specs, indexed by Counter.
var Counters = [...]Spec{
	Obtained: {Prom: "locklib_obtained_total", OTel: "locklib.obtained", Unit: "{lock}",
		Help: "Locks obtained by Obtain or TryObtain (each level of a re-entrant lock counts)."},
	NotObtained: {Prom: "locklib_not_obtained_total", OTel: "locklib.not_obtained", Unit: "{call}", Label: "reason",
		Help: "Obtain or TryObtain calls that gave up, by reason (taken, context, backend, not_replicated, invalid, other)."},
	BackendErrors: {Prom: "locklib_backend_errors_total", OTel: "locklib.backend_errors", Unit: "{error}", Label: "op",
		Help: "Redis or network errors, by operation (acquire, renew, release)."},
	Renewals: {Prom: "locklib_renewals_total", OTel: "locklib.renewals", Unit: "{renewal}",
		Help: "Renewals (watchdog or Refresh) Redis confirmed."},
	RenewalFailures: {Prom: "locklib_renewal_failures_total", OTel: "locklib.renewal_failures", Unit: "{renewal}", Label: "reason",
		Help: "Renewals refused or failed, by reason (not_held, backend, not_replicated, other)."},
	Lost: {Prom: "locklib_lost_total", OTel: "locklib.lost", Unit: "{lock}", Label: "reason",
		Help: "Locks lost, by reason (not_held: a renewal was refused; validity_passed: no renewal confirmed in time)."},
	Releases: {Prom: "locklib_releases_total", OTel: "locklib.releases", Unit: "{call}", Label: "result",
		Help: "Release calls sent to Redis, by result (ok, not_held, backend, other)."},
}

// Histograms are the histograms' specs, indexed by Histogram.
var Histograms = [...]Spec{
	AcquireWait: {Prom: "locklib_acquire_wait_seconds", OTel: "locklib.acquire.wait", Unit: "s",
		Help:    "Time from the start of Obtain or TryObtain until the lock was obtained.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
	Hold: {Prom: "locklib_hold_seconds", OTel: "locklib.hold", Unit: "s",
		Help:    "Time a lock was held: from obtained until released or lost, whichever came first.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}},
}

// HeldSpec is the gauge of locks held now.
var HeldSpec = Spec{Prom: "locklib_held", OTel: "locklib.held", Unit: "{lock}",
	Help: "Locks held now: obtained, and not released or lost yet."}

// FoldedSpec is the gauge of names folded into keygroup.Other.
var FoldedSpec = Spec{Prom: "locklib_names_folded", OTel: "locklib.names.folded", Unit: "{name}",
	Help: "Distinct lock names folded into _other because the cap on names was reached."}

// DefaultMaxNames caps the distinct names by default, as `lockscope exporter` caps groups.
const DefaultMaxNames = 100

// Namer gives a key its bounded name: the name func's result, folded by a keygroup.Folder
// (the cap holds whatever the func returns). Safe for concurrent use.
type Namer struct {
	name   func(key string) string
	folder *keygroup.Folder
}

// NewNamer returns a Namer over name (nil: keygroup.Default's group) capped at max distinct
// names (max <= 0: DefaultMaxNames). name's results are made safe as keygroup's groups are
// (keygroup.Safe): a label value must be valid UTF-8, or client_golang panics.
func NewNamer(name func(key string) string, max int) *Namer {
	if name == nil {
		name = keygroup.Default.Group
	} else {
		userName := name
		name = func(key string) string { return keygroup.Safe(userName(key)) }
	}
	if max <= 0 {
		max = DefaultMaxNames
	}
	return &Namer{name: name, folder: keygroup.NewFolder(max)}
}

// Name is key's bounded name.
func (n *Namer) Name(key string) string { return n.folder.Fold(n.name(key)) }

// Folded is how many distinct names were folded into keygroup.Other so far.
func (n *Namer) Folded() int { return n.folder.Folded() }

// Reason is err's bounded reason: a label value, never the error's text (which names the
// key). nil is "ok".
func Reason(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, locklib.ErrNotReplicated):
		return "not_replicated"
	case errors.Is(err, locklib.ErrBackend): // before context: a renewal's timeout is the backend's
		return "backend"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "context"
	case errors.Is(err, locklib.ErrInvalid):
		return "invalid"
	case errors.Is(err, locklib.ErrValidityPassed):
		return "validity_passed"
	case errors.Is(err, locklib.ErrNotHeld):
		return "not_held"
	case errors.Is(err, locklib.ErrNotObtained):
		return "taken"
	default:
		return "other"
	}
}

// Sink is an adapter's set of instruments.
type Sink interface {
	// Count adds one to counter c for name; label is the value of c's Spec.Label, "" when
	// it has none.
	Count(c Counter, name, label string)
	Observe(h Histogram, name string, d time.Duration)
	// Held adds delta to the gauge of locks held under name.
	Held(name string, delta int64)
}

// Record turns o into updates of s. The held gauge goes up at acquired and down once per
// lock: at lost, or at released unless the lock was lost first (WasLost).
func Record(s Sink, n *Namer, o locklib.Observation) {
	switch o.Type {
	case locklib.EventAcquired:
		name := n.Name(o.Key)
		s.Count(Obtained, name, "")
		s.Observe(AcquireWait, name, o.Wait)
		s.Held(name, 1)
	case locklib.EventNotObtained:
		outcome(s, NotObtained, n.Name(o.Key), o.Err, "acquire")
	case locklib.EventRenewed:
		s.Count(Renewals, n.Name(o.Key), "")
	case locklib.EventRenewFailed:
		outcome(s, RenewalFailures, n.Name(o.Key), o.Err, "renew")
	case locklib.EventLost:
		// The loss is counted last: whoever sees it counted sees the lock no longer held.
		name := n.Name(o.Key)
		s.Held(name, -1)
		s.Observe(Hold, name, o.Hold)
		s.Count(Lost, name, Reason(o.Err))
	case locklib.EventReleased:
		name := n.Name(o.Key)
		outcome(s, Releases, name, o.Err, "release")
		if !o.WasLost {
			s.Observe(Hold, name, o.Hold)
			s.Held(name, -1)
		}
	}
}

// outcome counts err's reason on c, and a backend error of op too when it is one.
func outcome(s Sink, c Counter, name string, err error, op string) {
	reason := Reason(err)
	s.Count(c, name, reason)
	if reason == "backend" {
		s.Count(BackendErrors, name, op)
	}
}
