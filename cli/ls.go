package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// Sort orders of ls (docs/cli.md).
var lsSorts = []string{"key", "ttl", "age", "holder"}

// lsOptions is `lockscope ls`.
type lsOptions struct {
	IO    IOStreams
	Conn  connection
	JSON  bool
	Sort  string // one of lsSorts
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
	if !slices.Contains(lsSorts, opts.Sort) {
		return withExit(exitUsage, fmt.Errorf("--sort %q: want one of %s", opts.Sort, strings.Join(lsSorts, ", ")))
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
		fmt.Fprintln(opts.IO.ErrOut, "lockscope: warning:", t.Redact(w))
	}
	locks := census.Locks
	sortLocks(locks, opts.Sort)
	total := len(locks)
	if opts.Limit > 0 && len(locks) > opts.Limit {
		locks = locks[:opts.Limit]
	}
	if opts.JSON {
		err = writeLocksJSON(opts.IO.Out, locks)
	} else {
		err = writeLocksTable(opts.IO.Out, locks, total, opts.Conn.StuckAfter, t.Mode)
	}
	if err != nil {
		return err
	}
	if len(census.Missing) > 0 {
		return withExit(exitPartial, fmt.Errorf("partial census: could not read %s", strings.Join(census.Missing, ", ")))
	}
	return nil
}

// sortLocks orders locks in place; ties and unknowns fall back to the key.
func sortLocks(locks []scanner.Lock, by string) {
	byKey := func(a, b *scanner.Lock) int { return strings.Compare(a.Key, b.Key) }
	var less func(a, b *scanner.Lock) int
	switch by {
	case "ttl": // soonest expiry first, no expiry last
		less = func(a, b *scanner.Lock) int {
			if a.NoExpiry != b.NoExpiry {
				return boolOrder(a.NoExpiry)
			}
			return cmp.Compare(a.TTL, b.TTL)
		}
	case "age": // oldest first, unknown age last
		less = func(a, b *scanner.Lock) int {
			if a.AcquiredAt.IsZero() != b.AcquiredAt.IsZero() {
				return boolOrder(a.AcquiredAt.IsZero())
			}
			return a.AcquiredAt.Compare(b.AcquiredAt)
		}
	case "holder": // by node, unknown holder last
		less = func(a, b *scanner.Lock) int {
			if (a.Node == "") != (b.Node == "") {
				return boolOrder(a.Node == "")
			}
			return strings.Compare(a.Node, b.Node)
		}
	default:
		less = func(*scanner.Lock, *scanner.Lock) int { return 0 }
	}
	slices.SortStableFunc(locks, func(a, b scanner.Lock) int {
		if c := less(&a, &b); c != 0 {
			return c
		}
		return byKey(&a, &b)
	})
}

// boolOrder sorts the true side last.
func boolOrder(aIsTrue bool) int {
	if aIsTrue {
		return 1
	}
	return -1
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
		Value:     scanner.SafeText(l.Value, 0),
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
			v, ttl := scanner.SafeText(in.Value, 0), ttlMs(in.TTL, in.NoExpiry)
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

func writeLocksJSON(w io.Writer, locks []scanner.Lock) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range locks {
		if err := enc.Encode(toLockJSON(&locks[i])); err != nil {
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

func writeLocksTable(w io.Writer, locks []scanner.Lock, total int, stuckAfter time.Duration, mode connect.Mode) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tHOLDER\tTRACE\tAGE\tTTL\tRE\tFENCE\tFORMAT\tFLAGS")
	noExpiry, stuck := 0, 0
	for i := range locks {
		l := &locks[i]
		flags := lockFlags(l, stuckAfter, mode)
		if l.NoExpiry {
			noExpiry++
		}
		if isStuck(l, stuckAfter) {
			stuck++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			scanner.SafeText(l.Key, keyWidth), orDash(scanner.SafeText(l.Node, holderWidth)),
			orDash(scanner.SafeText(l.Trace, traceWidth)), ageText(l), ttlText(l.TTL, l.NoExpiry),
			intOrDash(l.Reentry, l.Reentry > 0), int64OrDash(l.Fence, l.HasFence), l.Format, strings.Join(flags, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	summary := fmt.Sprintf("%d locks", total)
	if len(locks) < total {
		summary = fmt.Sprintf("%d of %d locks shown", len(locks), total)
	}
	_, err := fmt.Fprintf(w, "%s, %d without expiry, %d stuck (held > %s)\n", summary, noExpiry, stuck, stuckAfter)
	return err
}

// lockFlags are the markers of the FLAGS column.
func lockFlags(l *scanner.Lock, stuckAfter time.Duration, mode connect.Mode) []string {
	var flags []string
	if l.NoExpiry {
		flags = append(flags, "NO-EXPIRY")
	}
	if isStuck(l, stuckAfter) {
		flags = append(flags, "STUCK")
	}
	if l.Truncated {
		flags = append(flags, "value-cut")
	}
	if mode == connect.Redlock && l.Quorum != nil {
		q := fmt.Sprintf("quorum %d/%d", l.Quorum.Agree, l.Quorum.Total)
		if !l.Quorum.Reached {
			q = fmt.Sprintf("NO-QUORUM %d/%d", l.Quorum.Agree, l.Quorum.Total)
		}
		flags = append(flags, q)
	}
	return flags
}

func isStuck(l *scanner.Lock, stuckAfter time.Duration) bool {
	return !l.AcquiredAt.IsZero() && l.Age(l.FetchedAt) > stuckAfter
}

func ageText(l *scanner.Lock) string {
	if l.AcquiredAt.IsZero() {
		return "-"
	}
	return shortDuration(l.Age(l.FetchedAt))
}

func ttlText(ttl time.Duration, noExpiry bool) string {
	if noExpiry {
		return "never"
	}
	return shortDuration(ttl)
}

// shortDuration prints d compactly: 450ms, 12.3s, 3m12s, 2h05m, 3d04h.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + shortDuration(-d)
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOrDash(n int, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.Itoa(n)
}

func int64OrDash(n int64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
