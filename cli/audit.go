package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/spf13/cobra"
)

// auditOptions is `lockscope audit`.
type auditOptions struct {
	IO    IOStreams
	Conn  connection
	JSON  bool
	Limit int // the newest N records
}

func newAuditCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &auditOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit trail of admin actions (stream " + actions.DefaultAuditStream + "), newest first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Conn = connectionFlags(cmd, getenv)
			return runAudit(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object per record and line (JSONL)")
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "show the newest N records")
	return cmd
}

func runAudit(ctx context.Context, opts *auditOptions) error {
	if opts.Limit <= 0 {
		return withExit(exitUsage, fmt.Errorf("--limit %d: want 1 or more", opts.Limit))
	}
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	records, readErr := opts.Conn.admin(t).Audit(ctx, opts.Limit)
	if readErr != nil && len(records) == 0 {
		return describeError(t, readErr)
	}
	if opts.JSON {
		err = writeAuditJSON(opts.IO.Out, records, t)
	} else {
		err = writeAuditTable(opts.IO.Out, records, t.Redact)
	}
	if err != nil {
		return err
	}
	if readErr != nil {
		return withExit(exitPartial, fmt.Errorf("partial audit trail: %s", describeError(t, readErr)))
	}
	return nil
}

// auditJSON is one line of `audit --json` (docs/cli.md).
type auditJSON struct {
	ID        string   `json:"id"`
	Time      *string  `json:"time"`
	Operator  string   `json:"operator"`
	Action    string   `json:"action"`
	Key       string   `json:"key"`
	Holder    *string  `json:"holder"`
	Keys      []string `json:"keys"`
	Seen      string   `json:"seen"`
	Result    string   `json:"result"`
	Error     *string  `json:"error"`
	Reason    string   `json:"reason"`
	TTLMs     *int64   `json:"ttl_ms"`
	Instances *string  `json:"instances"`
	Sources   []string `json:"sources"`
}

func writeAuditJSON(w io.Writer, records []actions.AuditRecord, t connect.Target) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range records {
		j := auditJSON{
			ID: r.ID, Operator: present.SafeText(r.Operator, 0), Action: string(r.Action),
			Key: present.SafeText(r.Key, 0), Seen: present.SafeText(r.Seen, 0), Result: string(r.Result),
			Reason: present.SafeText(r.Reason, 0), Sources: r.Sources,
		}
		if !r.Time.IsZero() {
			at := r.Time.UTC().Format(time.RFC3339Nano)
			j.Time = &at
		}
		j.Error = optionalText(t.Redact(r.Error))
		j.Holder = optionalText(r.Holder)
		j.Keys = escapedKeys(r.Keys)
		if r.Action.Extends() {
			ms := r.TTL.Milliseconds()
			j.TTLMs = &ms
		}
		if r.Instances != "" {
			j.Instances = &r.Instances
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

// writeAuditTable is the audit table; redact removes the target's passwords from the errors
// recorded (connect.Target.Redact).
func writeAuditTable(w io.Writer, records []actions.AuditRecord, redact func(string) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printf(tw, "%s\n", present.Safe(strings.Join(present.AuditColumns, "\t"))) // our titles: Safe, or the tabs would be escaped
	// The widest a cell of each column gets; every cell is read from Redis, escaped by printf.
	widths := []int{0, 0, 0, 0, keyWidth, 32, 40, 60}
	for _, r := range records {
		cells := present.AuditRow(r, redact)
		line := make([]string, len(cells))
		for i, c := range cells {
			line[i] = present.SafeText(c, widths[i])
		}
		printf(tw, "%s\n", present.Safe(strings.Join(line, "\t")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printf(w, "%s\n", present.Count(len(records), "record"))
}
