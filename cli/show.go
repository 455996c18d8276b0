package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// showOptions is `lockscope show KEY`.
type showOptions struct {
	IO     IOStreams
	Conn   connection
	Key    string
	JSON   bool
	Server string // --server: one of several independent servers
}

func newShowCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &showOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "show KEY",
		Short: "Show one lock in full: holder, TTL, fence, raw and decoded value, every instance",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := printedArg("KEY", args[0])
			if err != nil {
				return err
			}
			opts.Conn, opts.Key = connectionFlags(cmd, getenv), key
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object: the fields of ls --json plus type, truncated, waiters, quorum, decoded")
	addServerFlag(cmd, &opts.Server)
	return cmd
}

func runShow(ctx context.Context, opts *showOptions) error {
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	targets, err := serverTargets(t, opts.Server)
	if err != nil {
		return err
	}
	key := present.Escape(opts.Key)
	// Independent servers: the key is a lock of its own on each server that has it, and each
	// is shown (one block, or one JSON line, each).
	var unread []string
	var readErr, notALock error
	shown := 0
	for _, one := range targets {
		sc := opts.Conn.scanner(one)
		l, err := sc.Get(ctx, opts.Key)
		down := downInstances(ctx, one, &l) // a Redlock set's instances that could not be read
		switch {
		case errors.Is(err, scanner.ErrGone) && len(down) > 0:
			return withExit(exitGone, fmt.Errorf("%s does not exist on the instances that answered; could not read %s", key, downAddrs(down)))
		case errors.Is(err, scanner.ErrGone):
			continue
		case err != nil && len(targets) > 1:
			printf(opts.IO.ErrOut, "lockscope: warning: %s\n", describeError(t, err))
			unread, readErr = append(unread, one.Addrs[0]), err
			continue
		case err != nil:
			return describeError(t, err)
		}
		if shown > 0 && !opts.JSON {
			if err := printf(opts.IO.Out, "\n"); err != nil {
				return err
			}
		}
		shown++
		switch err := showOne(ctx, opts, sc, &l, down); {
		case err == nil:
		case l.Format == scanner.FormatNotALock && len(targets) > 1:
			notALock = err // the other servers' locks under the key are still shown
		default:
			return err
		}
	}
	switch {
	case shown == 0 && len(unread) == len(targets):
		return describeError(t, readErr)
	case shown == 0 && len(unread) > 0:
		return withExit(exitGone, fmt.Errorf("%s does not exist on the servers that answered; could not read %s", key, strings.Join(unread, ", ")))
	case shown == 0:
		return withExit(exitGone, fmt.Errorf("%s does not exist", key))
	case len(unread) > 0:
		return withExit(exitPartial, fmt.Errorf("partial: could not read %s", strings.Join(unread, ", ")))
	}
	return notALock
}

// showOne writes l, read by sc, as a table or one JSON line; down names the instances of a
// Redlock set that could not be read, and why (downInstances).
func showOne(ctx context.Context, opts *showOptions, sc *scanner.Scanner, l *scanner.Lock, down map[string]string) error {
	// A list, a set, ... under the pattern: its TTL, or lack of one, says nothing about a lock.
	notALock := l.Format == scanner.FormatNotALock
	now := sc.Clocks(ctx).Now(l, l.FetchedAt) // ages on the server's clock: the one values are stamped with
	var err error
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetEscapeHTML(false)
		err = enc.Encode(toShowJSON(l, now, down))
	case !notALock:
		err = writeShow(opts.IO.Out, l, opts.Conn.StuckAfter, now, down)
	}
	if err == nil && notALock {
		err = withExit(exitOther, fmt.Errorf("%s is a %s, not a lock: lockscope does not treat it as a lock", present.Escape(l.Key), l.Type))
	}
	if err == nil && len(down) > 0 { // as ls: the output is whole only where the exit code says so
		return withExit(exitPartial, fmt.Errorf("partial: could not read %s", downAddrs(down)))
	}
	return err
}

// printedArg is a key or value given on the command line in the form lockscope prints it
// (present.Escape's, docs/cli.md): what ls and show print is taken back verbatim.
func printedArg(name, arg string) (string, error) {
	raw, err := present.Unescape(arg)
	if err != nil {
		return "", withExit(exitUsage, fmt.Errorf("%s %s: %w", name, arg, err))
	}
	return raw, nil
}

// downInstances maps each instance of l that could not be read to why: its server's answer
// to a ping now, redacted (the census keeps only the fact that the read failed).
func downInstances(ctx context.Context, t connect.Target, l *scanner.Lock) map[string]string {
	down := map[string]string{}
	for _, in := range l.PerInstance() {
		if !in.Missing {
			continue
		}
		down[in.Addr] = "could not be read"
		for i, addr := range t.Addrs {
			if addr == in.Addr && i < len(t.Clients) {
				if err := t.Clients[i].Ping(ctx).Err(); err != nil {
					down[in.Addr] = t.Redact(t.Classify(err).Error())
				}
			}
		}
	}
	return down
}

// downAddrs lists the instances of down in order.
func downAddrs(down map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(down)), ", ")
}

// showJSON is `show --json`: every field of ls --json, plus details.
type showJSON struct {
	lockJSON
	Type      string         `json:"type"`
	Truncated bool           `json:"truncated"`
	Waiters   *int           `json:"waiters"`
	Quorum    *quorumJSON    `json:"quorum"`
	Decoded   map[string]any `json:"decoded"`

	// Instances says more than lockJSON's (the shallower field wins in encoding/json).
	Instances []showInstanceJSON `json:"instances"`
}

type quorumJSON struct {
	Agree   int  `json:"agree"`
	Needed  int  `json:"needed"`
	Total   int  `json:"total"`
	Reached bool `json:"reached"`
}

// showInstanceJSON is instanceJSON plus the instance's state: "held" (it holds the key),
// "absent" (it answered without the key) or "down" (it could not be read; error says why).
type showInstanceJSON struct {
	instanceJSON
	State string  `json:"state"`
	Error *string `json:"error"`
}

func toShowJSON(l *scanner.Lock, now time.Time, down map[string]string) showJSON {
	j := showJSON{lockJSON: toLockJSON(l, now), Type: l.Type, Truncated: l.Truncated, Decoded: decodedValue(l)}
	j.Instances = make([]showInstanceJSON, len(j.lockJSON.Instances))
	for i, in := range j.lockJSON.Instances {
		j.Instances[i] = showInstanceJSON{instanceJSON: in, State: "absent"}
		if why, isDown := down[in.Addr]; isDown {
			j.Instances[i].State, j.Instances[i].Error = "down", &why
		} else if in.Value != nil {
			j.Instances[i].State = "held"
		}
	}
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
	if l.Shared != nil && l.Owners == nil {
		return nil // its holders are in shared (a Redisson read-write lock's owners are still listed)
	}
	switch l.Format {
	case scanner.FormatLockscope:
		v, err := protocol.ParseValue(l.Value)
		if err != nil {
			return nil
		}
		d := map[string]any{
			"node":        present.Escape(v.Node),
			"trace":       present.Escape(v.Trace),
			"acquired_at": v.AcquiredAt.UTC().Format(time.RFC3339Nano),
			"rand":        v.Rand,
			"count":       v.Count,
		}
		return d
	case scanner.FormatRedisson:
		owners := make([]map[string]any, 0, len(l.Owners))
		for _, o := range l.Owners {
			owners = append(owners, map[string]any{"id": present.Escape(o.ID), "count": o.Count})
		}
		return map[string]any{"owners": owners}
	case scanner.FormatBSM:
		return map[string]any{"token": present.Escape(l.Token()), "meta": present.Escape(l.Meta())}
	}
	return nil
}

// writeShow is show's table. A lock is shown as it was when read: its TTL at FetchedAt, its
// age at serverNow, the time of the read on its server's clock. down names the instances that
// could not be read, and why (downInstances).
func writeShow(w io.Writer, l *scanner.Lock, stuckAfter time.Duration, serverNow time.Time, down map[string]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// value: text as read (escaped here), or a present.Safe part composed by present.Sprintf.
	row := func(name string, value any) { printf(tw, "%s\t%s\n", name, value) }
	row("key", l.Key)
	row("format", string(l.Format))
	if l.Shared != nil {
		row("kind", l.Kind().String())
	}
	row("type", present.OrUnknown(l.Type))
	row("holder", present.HolderText(l))
	row("trace", present.OrUnknown(l.Trace))
	if l.AcquiredAt.IsZero() {
		row("acquired", present.Unknown)
	} else {
		note := ""
		if present.Stuck(l, serverNow, stuckAfter) {
			note = fmt.Sprintf("  %s (held > %s)", present.FlagStuck.Label(), present.Duration(stuckAfter))
		}
		row("acquired", present.Acquired(l, serverNow)+note)
	}
	switch {
	case present.NeverFrees(l) && l.IsSemaphore():
		row("ttl", present.MaybeSemaphoreNoTTL)
	case l.NoExpiry && l.IsSemaphore():
		row("ttl", present.SemaphoreNoTTL)
	case l.NoExpiry:
		row("ttl", present.NeverExpires)
	default:
		row("ttl", present.TTL(l, l.FetchedAt))
	}
	row("re-entry", present.Ordinal(int64(l.Reentry), l.Reentry > 0))
	row("fence", present.Ordinal(l.Fence, l.HasFence))
	row("waiters", present.Ordinal(int64(l.Waiters), l.HasWaiters))
	if l.Shared != nil {
		writeShared(row, l, serverNow)
	}
	row("value", present.Safe(present.Value(l, 0)))
	if d, ok := decodedText(l); ok {
		row("decoded", d)
	}
	if q := l.Quorum; q != nil {
		row("quorum", present.QuorumAgreement(q)+": "+present.QuorumVerdict(q))
	}
	for i, in := range l.PerInstance() {
		name := ""
		if i == 0 {
			name = "instances"
		}
		row(name, instanceText(in, down))
	}
	return tw.Flush()
}

// writeShared writes a shared primitive's rows: its counts, then a row per holder and per
// queued waiter (their TTLs at the time of the read, as the lock's).
func writeShared(row func(name string, value any), l *scanner.Lock, serverNow time.Time) {
	sh := l.Shared
	row("shared", present.SharedSummary(sh))
	for i, h := range sh.Holders {
		name := ""
		if i == 0 {
			name = "holders"
		}
		row(name, present.SharedHolderLine(l, h, l.FetchedAt, serverNow))
	}
	for i, w := range sh.Waiters {
		name := ""
		if i == 0 {
			name = "queued"
		}
		row(name, present.SharedWaiterLine(w))
	}
}

// decodedText is the decoded line of a lock, when its value decodes (as decodedValue).
func decodedText(l *scanner.Lock) (present.Safe, bool) {
	if l.Shared != nil && l.Owners == nil {
		return "", false // its holders have rows of their own (writeShared)
	}
	switch l.Format {
	case scanner.FormatRedisson:
		return present.Sprintf("owners %s", present.Owners(l.Owners)), true
	case scanner.FormatLockscope:
		v, err := protocol.ParseValue(l.Value)
		if err != nil {
			return "", false
		}
		return present.Sprintf("node=%s trace=%s acquired_at=%s rand=%s count=%d",
			v.Node, v.Trace, present.Time(v.AcquiredAt), v.Rand, v.Count), true
	case scanner.FormatBSM:
		return present.Sprintf("token=%s meta=%s", l.Token(), l.Meta()), true
	}
	return "", false
}

func instanceText(in scanner.Instance, down map[string]string) present.Safe {
	switch {
	case in.Missing:
		return present.Sprintf("%s  down: %s", in.Addr, down[in.Addr])
	case !in.Present:
		return present.Sprintf("%s  (no key)", in.Addr)
	}
	return present.Sprintf("%s  ttl %s  value %s", in.Addr, present.InstanceTTL(in), present.Cut{Text: in.Value, Max: 120})
}
