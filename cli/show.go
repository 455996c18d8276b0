package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

func newShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show KEY",
		Short: "Show one lock in full: holder, TTL, fence, raw and decoded value, every instance",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object: the fields of ls --json plus type, truncated, waiters, quorum, decoded")
	return cmd
}

func runShow(cmd *cobra.Command, key string, asJSON bool) error {
	t, closeTarget, err := openTarget(cmd)
	if err != nil {
		return err
	}
	defer closeTarget()
	l, err := scanner.New(t, scanner.Options{Pattern: patternFlag(cmd)}).Get(cmd.Context(), key)
	if errors.Is(err, scanner.ErrGone) {
		return withExit(exitGone, fmt.Errorf("%s does not exist", scanner.SafeText(key, 0)))
	}
	if err != nil {
		return describeError(err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(toShowJSON(&l))
	}
	return writeShow(out, &l, stuckAfterFlag(cmd))
}

// showJSON is `show --json`: every field of ls --json, plus details.
type showJSON struct {
	lockJSON
	Type      string         `json:"type"`
	Truncated bool           `json:"truncated"`
	Waiters   *int           `json:"waiters"`
	Quorum    *quorumJSON    `json:"quorum"`
	Decoded   map[string]any `json:"decoded"`
}

type quorumJSON struct {
	Agree   int  `json:"agree"`
	Needed  int  `json:"needed"`
	Total   int  `json:"total"`
	Reached bool `json:"reached"`
}

func toShowJSON(l *scanner.Lock) showJSON {
	j := showJSON{lockJSON: toLockJSON(l), Type: l.Type, Truncated: l.Truncated, Decoded: decodedValue(l)}
	if l.HasWaiters {
		j.Waiters = &l.Waiters
	}
	if q := l.Quorum; q != nil {
		j.Quorum = &quorumJSON{Agree: q.Agree, Needed: q.Needed, Total: q.Total, Reached: q.Reached}
	}
	return j
}

// decodedValue is the raw value taken apart as its format defines it; nil when the format
// carries nothing to decode.
func decodedValue(l *scanner.Lock) map[string]any {
	switch l.Format {
	case scanner.FormatLockscope:
		v, err := protocol.ParseValue(l.Value)
		if err != nil {
			return nil
		}
		d := map[string]any{
			"node":        v.Node,
			"trace":       v.Trace,
			"acquired_at": v.AcquiredAt.UTC().Format(time.RFC3339Nano),
			"rand":        v.Rand,
			"count":       v.Count,
		}
		return d
	case scanner.FormatRedisson:
		owners := make([]map[string]any, 0, len(l.Owners))
		for _, o := range l.Owners {
			owners = append(owners, map[string]any{"id": scanner.SafeText(o.ID, 0), "count": o.Count})
		}
		return map[string]any{"owners": owners}
	case scanner.FormatBSM:
		return map[string]any{"token": scanner.SafeText(strings.TrimSuffix(l.Value, l.Meta()), 0), "meta": scanner.SafeText(l.Meta(), 0)}
	}
	return nil
}

func writeShow(w io.Writer, l *scanner.Lock, stuckAfter time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	row("key", scanner.SafeText(l.Key, 0))
	row("format", string(l.Format))
	row("type", orDash(l.Type))
	row("holder", orDash(scanner.SafeText(l.Node, 0)))
	row("trace", orDash(scanner.SafeText(l.Trace, 0)))
	if l.AcquiredAt.IsZero() {
		row("acquired", "unknown")
	} else {
		age := l.Age(l.FetchedAt)
		note := ""
		if age > stuckAfter {
			note = fmt.Sprintf("  STUCK (held > %s)", stuckAfter)
		}
		row("acquired", fmt.Sprintf("%s (%s ago)%s", l.AcquiredAt.UTC().Format(time.RFC3339Nano), shortDuration(age), note))
	}
	if l.NoExpiry {
		row("ttl", "NO EXPIRY: this lock never frees itself")
	} else {
		row("ttl", shortDuration(l.TTL))
	}
	row("re-entry", intOrDash(l.Reentry, l.Reentry > 0))
	row("fence", int64OrDash(l.Fence, l.HasFence))
	row("waiters", intOrDash(l.Waiters, l.HasWaiters))
	value := scanner.SafeText(l.Value, 0)
	if l.Truncated {
		value += fmt.Sprintf("  (first %d bytes only)", scanner.ValueCap)
	}
	row("value", value)
	if d := decodedValue(l); d != nil {
		row("decoded", decodedText(l, d))
	}
	if q := l.Quorum; q != nil {
		verdict := "reached"
		if !q.Reached {
			verdict = "NOT reached"
		}
		row("quorum", fmt.Sprintf("%d of %d instances agree, %d needed: %s", q.Agree, q.Total, q.Needed, verdict))
	}
	for i, in := range l.PerInstance() {
		name := ""
		if i == 0 {
			name = "instances"
		}
		row(name, instanceText(in))
	}
	return tw.Flush()
}

func decodedText(l *scanner.Lock, d map[string]any) string {
	switch l.Format {
	case scanner.FormatRedisson:
		var parts []string
		for _, o := range l.Owners {
			parts = append(parts, fmt.Sprintf("%s x%d", scanner.SafeText(o.ID, 0), o.Count))
		}
		return "owners " + strings.Join(parts, ", ")
	case scanner.FormatLockscope:
		return fmt.Sprintf("node=%s trace=%s acquired_at=%s rand=%s count=%d",
			scanner.SafeText(d["node"].(string), 0), scanner.SafeText(d["trace"].(string), 0), d["acquired_at"], d["rand"], d["count"])
	}
	return fmt.Sprintf("token=%s meta=%s", d["token"], d["meta"])
}

func instanceText(in scanner.Instance) string {
	switch {
	case in.Missing:
		return in.Addr + "  could not be read"
	case !in.Present:
		return in.Addr + "  (no key)"
	}
	return fmt.Sprintf("%s  ttl %s  value %s", in.Addr, ttlText(in.TTL, in.NoExpiry), scanner.SafeText(in.Value, 120))
}
