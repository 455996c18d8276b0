package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/present"
	"github.com/spf13/cobra"
)

func newAuditCmd() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit trail of admin actions (stream " + actions.DefaultAuditStream + "), newest first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit <= 0 {
				return withExit(exitUsage, fmt.Errorf("--limit %d: want 1 or more", limit))
			}
			return runAudit(cmd, asJSON, limit)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per record and line (JSONL)")
	cmd.Flags().IntVar(&limit, "limit", 50, "show the newest N records")
	return cmd
}

func runAudit(cmd *cobra.Command, asJSON bool, limit int) error {
	t, closeTarget, err := openTarget(cmd)
	if err != nil {
		return err
	}
	defer closeTarget()
	records, readErr := newAdmin(cmd, t).Audit(cmd.Context(), limit)
	if readErr != nil && len(records) == 0 {
		return describeError(readErr)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		err = writeAuditJSON(out, records)
	} else {
		err = writeAuditTable(out, records)
	}
	if err != nil {
		return err
	}
	if readErr != nil {
		return withExit(exitPartial, fmt.Errorf("partial audit trail: %s", describeError(readErr)))
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
	Seen      string   `json:"seen"`
	Result    string   `json:"result"`
	Error     *string  `json:"error"`
	Reason    string   `json:"reason"`
	TTLMs     *int64   `json:"ttl_ms"`
	Instances *string  `json:"instances"`
	Sources   []string `json:"sources"`
}

func writeAuditJSON(w io.Writer, records []actions.AuditRecord) error {
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
		if r.Error != "" {
			msg := scrub(present.SafeText(r.Error, 0))
			j.Error = &msg
		}
		if r.Action == actions.ActionExtend {
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

func writeAuditTable(w io.Writer, records []actions.AuditRecord) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tOPERATOR\tACTION\tKEY\tRESULT\tREASON\tSEEN")
	for _, r := range records {
		action := string(r.Action)
		if r.Action == actions.ActionExtend {
			action += " " + r.TTL.String()
		}
		result := present.Safe(r.Result)
		if r.Error != "" {
			result = present.Sprintf("%s: %s", r.Result, present.Cut{Text: scrub(r.Error), Max: 60})
		}
		fmt.Fprint(tw, present.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339),
			present.Cut{Text: r.Operator, Max: 32}, action, present.Cut{Text: r.Key, Max: keyWidth}, result,
			present.Cut{Text: present.OrUnknown(r.Reason), Max: 40}, present.Cut{Text: r.Seen, Max: 60}))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d records\n", len(records))
	return err
}
