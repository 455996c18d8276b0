package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// Sort orders of ls (docs/cli.md).
var lsSorts = []string{"key", "ttl", "age", "holder"}

func newLsCmd() *cobra.Command {
	var asJSON bool
	var sortBy string
	var limit int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the locks: a census of the keys matching --pattern",
		Long: "List the locks: a census of the keys matching --pattern, as a table or as JSON lines.\n" +
			"The table marks locks without expiry (they never free themselves) and locks held longer than --stuck-after.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(lsSorts, sortBy) {
				return withExit(exitUsage, fmt.Errorf("--sort %q: want one of %s", sortBy, strings.Join(lsSorts, ", ")))
			}
			if limit < 0 {
				return withExit(exitUsage, fmt.Errorf("--limit %d: want 0 (no limit) or more", limit))
			}
			return runLs(cmd, asJSON, sortBy, limit)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per lock and line (JSONL)")
	cmd.Flags().StringVar(&sortBy, "sort", "key", "order: key, ttl (soonest expiry first), age (oldest first) or holder")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most N locks (0: all)")
	return cmd
}

func runLs(cmd *cobra.Command, asJSON bool, sortBy string, limit int) error {
	t, closeTarget, err := openTarget(cmd)
	if err != nil {
		return err
	}
	defer closeTarget()
	census, err := scanner.New(t, scanner.Options{Pattern: patternFlag(cmd)}).Census(cmd.Context())
	if err != nil {
		return describeError(err)
	}
	stderr := cmd.ErrOrStderr()
	for _, w := range census.Warnings {
		fmt.Fprintln(stderr, "lockscope: warning:", scrub(w))
	}
	locks := census.Locks
	sortLocks(locks, sortBy)
	total := len(locks)
	if limit > 0 && len(locks) > limit {
		locks = locks[:limit]
	}
	out := cmd.OutOrStdout()
	if asJSON {
		err = writeLocksJSON(out, locks)
	} else {
		err = writeLocksTable(out, locks, total, stuckAfterFlag(cmd), t.Mode)
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

func writeLocksTable(w io.Writer, locks []scanner.Lock, total int, stuckAfter time.Duration, mode scanner.Mode) error {
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
func lockFlags(l *scanner.Lock, stuckAfter time.Duration, mode scanner.Mode) []string {
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
	if mode == scanner.Redlock && l.Quorum != nil {
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

// usageArgs tags cobra's argument errors with the usage exit code.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return withExit(exitUsage, err)
		}
		return nil
	}
}
