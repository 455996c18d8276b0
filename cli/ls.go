package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// lsOptions is `lockscope ls`.
type lsOptions struct {
	IO    IOStreams
	Conn  connection
	JSON  bool
	Sort  string // a present.Sort name
	Limit int    // 0: all
}

func newLsCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &lsOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the locks: a census of the keys matching --pattern",
		Long: "List the locks: a census of the keys matching --pattern, as a table or as JSON lines.\n" +
			"The table marks locks without expiry (they never free themselves) and locks held longer than --stuck-after.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Conn = connectionFlags(cmd, getenv)
			return runLs(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object per lock and line (JSONL)")
	cmd.Flags().StringVar(&opts.Sort, "sort", "key", "order: key, ttl (soonest expiry first), age (oldest first) or holder")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "show at most N locks (0: all)")
	return cmd
}

func runLs(ctx context.Context, opts *lsOptions) error {
	by, err := present.ParseSort(opts.Sort)
	if err != nil {
		return withExit(exitUsage, fmt.Errorf("--sort %q: %w", opts.Sort, err))
	}
	if opts.Limit < 0 {
		return withExit(exitUsage, fmt.Errorf("--limit %d: want 0 (no limit) or more", opts.Limit))
	}
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	census, err := opts.Conn.scanner(t).Census(ctx)
	if err != nil {
		return describeError(t, err)
	}
	for _, w := range census.Warnings {
		printf(opts.IO.ErrOut, "lockscope: warning: %s\n", t.Redact(w))
	}
	locks := make([]*scanner.Lock, len(census.Locks))
	for i := range census.Locks {
		locks[i] = &census.Locks[i]
	}
	present.SortLocks(locks, by, false)
	total := len(locks)
	if opts.Limit > 0 && len(locks) > opts.Limit {
		locks = locks[:opts.Limit]
	}
	if opts.JSON {
		err = writeLocksJSON(opts.IO.Out, locks)
	} else {
		err = writeLocksTable(opts.IO.Out, locks, total, opts.Conn.StuckAfter)
	}
	if err != nil {
		return err
	}
	if len(census.Missing) > 0 {
		return withExit(exitPartial, fmt.Errorf("partial census: could not read %s", strings.Join(census.Missing, ", ")))
	}
	return nil
}

// lockJSON is one line of `ls --json` and the base of `show --json`. The field set is a
// contract with scripts (docs/cli.md): change it only by adding to show's extension.
type lockJSON struct {
	Key        string         `json:"key"`
	Format     string         `json:"format"`
	Node       string         `json:"node"`
	Trace      string         `json:"trace"`
	AcquiredAt *string        `json:"acquired_at"`
	AgeMs      *int64         `json:"age_ms"`
	TTLMs      int64          `json:"ttl_ms"`
	Reentry    *int           `json:"reentry"`
	Fence      *int64         `json:"fence"`
	Value      string         `json:"value"`
	Instances  []instanceJSON `json:"instances"`
}

// instanceJSON is the key on one server; value and ttl_ms are null where the server does
// not hold the key or could not be read.
type instanceJSON struct {
	Addr  string  `json:"addr"`
	Value *string `json:"value"`
	TTLMs *int64  `json:"ttl_ms"`
}

func toLockJSON(l *scanner.Lock) lockJSON {
	j := lockJSON{
		Key:       l.Key,
		Format:    string(l.Format),
		Node:      l.Node,
		Trace:     l.Trace,
		TTLMs:     ttlMs(l.TTL, l.NoExpiry),
		Value:     present.SafeText(l.Value, 0),
		Instances: []instanceJSON{},
	}
	if !l.AcquiredAt.IsZero() {
		at := l.AcquiredAt.UTC().Format(time.RFC3339Nano)
		age := l.Age(l.FetchedAt).Milliseconds()
		j.AcquiredAt, j.AgeMs = &at, &age
	}
	if l.Reentry > 0 {
		j.Reentry = &l.Reentry
	}
	if l.HasFence {
		j.Fence = &l.Fence
	}
	for _, in := range l.PerInstance() {
		ij := instanceJSON{Addr: in.Addr}
		if in.Present && !in.Missing {
			v, ttl := present.SafeText(in.Value, 0), ttlMs(in.TTL, in.NoExpiry)
			ij.Value, ij.TTLMs = &v, &ttl
		}
		j.Instances = append(j.Instances, ij)
	}
	return j
}

// ttlMs is the TTL in ms, -1 for a key without expiry.
func ttlMs(ttl time.Duration, noExpiry bool) int64 {
	if noExpiry {
		return -1
	}
	return ttl.Milliseconds()
}

func writeLocksJSON(w io.Writer, locks []*scanner.Lock) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range locks {
		if err := enc.Encode(toLockJSON(l)); err != nil {
			return err
		}
	}
	return nil
}

// Column widths of the table: long keys and values are cut with a marker, never wrapped.
const (
	keyWidth    = 48
	holderWidth = 28
	traceWidth  = 20
)

// lsColumns are the ls table's titles.
var lsColumns = []string{present.ColumnKey, present.ColumnHolder, present.ColumnTrace, present.ColumnAge,
	present.ColumnTTL, present.ColumnReentry, present.ColumnFence, present.ColumnFormat, present.ColumnFlags}

// writeLocksTable is the ls table. A lock is shown as it was when read (now = FetchedAt):
// the census is a snapshot.
func writeLocksTable(w io.Writer, locks []*scanner.Lock, total int, stuckAfter time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printf(tw, "%s\n", present.Safe(strings.Join(lsColumns, "\t"))) // our titles: Safe, or the tabs would be escaped
	noExpiry, stuck := 0, 0
	for _, l := range locks {
		if l.NoExpiry {
			noExpiry++
		}
		if present.Stuck(l, l.FetchedAt, stuckAfter) {
			stuck++
		}
		printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			present.Cut{Text: l.Key, Max: keyWidth}, present.Cut{Text: present.OrUnknown(l.Node), Max: holderWidth},
			present.Cut{Text: present.OrUnknown(l.Trace), Max: traceWidth}, present.Age(l, l.FetchedAt), present.TTL(l, l.FetchedAt),
			present.Ordinal(int64(l.Reentry), l.Reentry > 0), present.Ordinal(l.Fence, l.HasFence), l.Format,
			present.FlagsText(l, l.FetchedAt, stuckAfter))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d locks", total)
	if len(locks) < total {
		summary = fmt.Sprintf("%d of %d locks shown", len(locks), total)
	}
	err := printf(w, "%s, %d without expiry, %d stuck (held > %s)\n", summary, noExpiry, stuck, present.Duration(stuckAfter))
	return err
}
