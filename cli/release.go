package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/spf13/cobra"
)

func newReleaseCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &actionOptions{IO: ios, Action: actions.ActionRelease}
	cmd := newActionCmd(&cobra.Command{
		Use:   "release KEY",
		Short: "Force-release a lock: delete it only if it still holds the value you saw",
		Long: "Force-release a lock with a compare-and-delete: the key is deleted only if it still holds the\n" +
			"expected value. Without --expect the current value is read, shown, and confirmed on the terminal\n" +
			"(or by --yes). With --holder ID, only that holder of a read-write lock or semaphore is removed,\n" +
			"only if it still holds exactly what was shown; with --together K2, a multi-key lock's keys go all\n" +
			"or nothing. Exit codes: 0 released, 4 changed hands or differs from --expect (nothing deleted),\n" +
			"5 already gone.",
	}, opts, getenv)
	cmd.Flags().StringArrayVar(&opts.Together, "together", nil, "another key of a multi-key lock, released with KEY all or nothing (repeat for each)")
	return cmd
}

// newActionCmd completes cmd as release or extend of KEY: the arguments, the flags they share,
// and the run.
func newActionCmd(cmd *cobra.Command, opts *actionOptions, getenv func(string) string) *cobra.Command {
	cmd.Args = usageArgs(cobra.ExactArgs(1))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := opts.fill(cmd, getenv, args[0]); err != nil {
			return err
		}
		return runAction(cmd.Context(), opts)
	}
	cmd.Flags().StringVar(&opts.Expect, "expect", "", "act only if the lock holds exactly this value, as ls and show print it (no read, no prompt)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why, recorded in the audit trail")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as one JSON object")
	cmd.Flags().StringVar(&opts.Holder, "holder", "", "act on this holder of a read-write lock or semaphore only (its ID as show prints it)")
	addServerFlag(cmd, &opts.Server)
	return cmd
}

// actionOptions is `lockscope release KEY` or `lockscope extend KEY`.
type actionOptions struct {
	IO          IOStreams
	Conn        connection
	Action      actions.Action
	Key         string
	Expect      string
	ExpectGiven bool // --expect was given (even empty): no read, no prompt
	Yes         bool
	Reason      string
	TTL         time.Duration // extend
	Shorten     bool          // extend: --allow-shorten, a TTL below the one left is meant
	Holder      string        // release --holder: one holder of a shared lock
	Together    []string      // release --together: the other keys of a multi-key lock
	JSON        bool
	Server      string // --server: one of several independent servers
}

// fill takes the connection flags, the key and --expect from the command line; the key and
// the value are given as ls and show print them (printedArg).
func (o *actionOptions) fill(cmd *cobra.Command, getenv func(string) string, key string) error {
	var err error
	o.Conn = connectionFlags(cmd, getenv)
	if o.Key, err = printedArg("KEY", key); err != nil {
		return err
	}
	o.ExpectGiven = cmd.Flags().Changed("expect")
	if o.Expect, err = printedArg("--expect", o.Expect); err != nil {
		return err
	}
	if cmd.Flags().Changed("holder") {
		if o.Holder, err = printedArg("--holder", o.Holder); err == nil && o.Holder == "" {
			err = withExit(exitUsage, errors.New("--holder needs a holder ID (show KEY lists them)"))
		}
		o.Action = map[actions.Action]actions.Action{actions.ActionRelease: actions.ActionReleaseHolder,
			actions.ActionExtend: actions.ActionExtendHolder}[o.Action]
		if o.Shorten {
			return withExit(exitUsage, errors.New("--allow-shorten does not go with --holder: a holder's lease is never shortened"))
		}
	}
	if err == nil && len(o.Together) > 0 {
		if o.Holder != "" {
			return withExit(exitUsage, errors.New("--holder and --together do not go together: a multi-key lock has one holder"))
		}
		for i, k := range o.Together {
			if o.Together[i], err = printedArg("--together", k); err != nil {
				return err
			}
		}
		o.Action = actions.ActionReleaseTogether
	}
	return err
}

// runAction is release and extend: refuse in read-only mode, find the expected value (flag or
// read + confirm), act through actions.Admin, print the result and map it to the exit code.
func runAction(ctx context.Context, opts *actionOptions) error {
	if opts.Action.Extends() && opts.TTL < time.Millisecond { // PEXPIRE's unit
		return withExit(exitUsage, fmt.Errorf("--ttl is required and must be at least 1ms (e.g. --ttl 30s)"))
	}
	if opts.Conn.ReadOnly {
		return withExit(exitReadOnly, fmt.Errorf("refused: --read-only is set and %s changes Redis; nothing changed", opts.Action))
	}
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	on, err := actionTarget(ctx, t, opts)
	if err != nil {
		return err
	}
	adminOpts := opts.Conn.adminOptions()
	adminOpts.TypedExpect = opts.ExpectGiven // a differing --expect is audited as value_differs
	admin := actions.New(on, adminOpts)
	stderr := opts.IO.ErrOut

	expect := opts.Expect
	if !opts.ExpectGiven {
		read := readAndConfirm
		switch opts.Action {
		case actions.ActionReleaseHolder, actions.ActionExtendHolder:
			read = readHolderAndConfirm
		case actions.ActionReleaseTogether:
			read = readTogetherAndConfirm
		}
		if expect, err = read(ctx, t, admin, opts); err != nil {
			return err
		}
	}

	var res actions.Result
	switch {
	case opts.Action == actions.ActionReleaseHolder:
		res, err = admin.ReleaseHolder(ctx, opts.Key, opts.Holder, expect, opts.Reason)
	case opts.Action == actions.ActionExtendHolder:
		res, err = admin.ExtendHolder(ctx, opts.Key, opts.Holder, expect, opts.TTL, opts.Reason)
	case opts.Action == actions.ActionReleaseTogether:
		res, err = admin.ReleaseTogether(ctx, append([]string{opts.Key}, opts.Together...), expect, opts.Reason)
	case opts.Action == actions.ActionExtend && opts.Shorten:
		res, err = admin.ExtendAllowingShorten(ctx, opts.Key, expect, opts.TTL, opts.Reason)
	case opts.Action == actions.ActionExtend:
		res, err = admin.Extend(ctx, opts.Key, expect, opts.TTL, opts.Reason)
	default:
		res, err = admin.Release(ctx, opts.Key, expect, opts.Reason)
	}
	if res.AuditErr != nil {
		defer printf(stderr, "lockscope: warning: the audit record was not written: %s\n", t.Redact(res.AuditErr.Error()))
	}
	if err != nil {
		return describeError(t, err)
	}
	if opts.JSON {
		err = writeResultJSON(opts.IO.Out, res, t, opts.ExpectGiven)
	} else {
		err = writeResult(opts.IO.Out, res, t, time.Now(), opts.ExpectGiven)
	}
	if err != nil {
		return err
	}
	return resultExit(res, opts.ExpectGiven)
}

// actionTarget is where the action runs: the target, or of independent servers the one that
// holds the key (--server when several do, or when one cannot be read: an action is aimed at
// one lock).
func actionTarget(ctx context.Context, t connect.Target, opts *actionOptions) (connect.Target, error) {
	targets, err := serverTargets(t, opts.Server)
	switch {
	case err != nil:
		return connect.Target{}, err
	case len(targets) == 1:
		return targets[0], nil
	}
	key := present.Escape(opts.Key)
	h, err := opts.Conn.admin(t).Peek(ctx, opts.Key)
	if err != nil {
		return connect.Target{}, describeError(t, err)
	}
	var holding []string
	for _, in := range h.Instances {
		if in.Err != nil { // the key may be on it too: aiming at the others could hit the wrong lock
			return connect.Target{}, describeError(t, fmt.Errorf("could not read %s on %s, which may hold it too: "+
				"pick the server with --%s ADDR: %w", key, in.Addr, flagServer, in.Err))
		}
		if in.Exists {
			holding = append(holding, in.Addr)
		}
	}
	switch len(holding) {
	case 0:
		return connect.Target{}, withExit(exitGone, fmt.Errorf("%s is already gone: nothing to %s", key, opts.Action))
	case 1:
		one, _ := t.On(holding[0])
		return one, nil
	}
	return connect.Target{}, withExit(exitUsage, fmt.Errorf("%s exists on %d servers (%s): pick one with --%s ADDR",
		key, len(holding), strings.Join(holding, ", "), flagServer))
}

// readAndConfirm reads the key's current value, shows it on stderr and asks the operator to
// confirm (unless --yes). It returns the value to expect. An attempt that stops here (key gone,
// not a lock, unreadable, answered No, no terminal) is recorded in the audit trail as well.
func readAndConfirm(ctx context.Context, t connect.Target, admin *actions.Admin, opts *actionOptions) (string, error) {
	stderr := opts.IO.ErrOut
	key := present.Safe(present.Escape(opts.Key)) // for printf and errors alike
	stop := func(seen string, outcome actions.Outcome, cause, err error) (string, error) {
		attempt := actions.Result{Action: opts.Action, Key: opts.Key, Seen: seen, TTL: opts.TTL, Outcome: outcome}
		if auditErr := admin.RecordStopped(ctx, attempt, cause, opts.Reason); auditErr != nil {
			printf(stderr, "lockscope: warning: the audit record was not written: %s\n", t.Redact(auditErr.Error()))
		}
		return "", err
	}
	h, err := admin.Peek(ctx, opts.Key)
	if err != nil {
		return stop("", actions.Failed, err, describeError(t, err))
	}
	if !h.Exists {
		return stop("", actions.AlreadyGone, nil, withExit(exitGone, fmt.Errorf("%s is already gone: nothing to %s", key, opts.Action)))
	}
	for _, in := range h.Instances {
		if in.Exists && in.Type == "zset" {
			if l, err := admin.PeekHolders(ctx, opts.Key); err == nil && l.Shared != nil {
				// A lease set has a lease per holder: the action names one of them.
				return stop("", actions.NotALock, nil, withExit(exitUsage, fmt.Errorf("%s is a %s with %s: %s one of them with --holder ID (show %s lists them); not touched",
					key, l.Kind(), present.Count(len(l.Shared.Live()), "holder"), opts.Action, key)))
			}
		}
		if in.Exists && in.Type != "string" && in.Type != "hash" {
			return stop("", actions.NotALock, nil, withExit(exitOther, fmt.Errorf("%s is a %s, not a lock: not touched", key, in.Type)))
		}
	}
	printf(stderr, "%s is held by %s\n", key, present.Holder(h.Value, nil, time.Now()))
	for _, in := range h.Instances {
		printf(stderr, "  %s\n", heldText(in, t))
	}
	if opts.Action == actions.ActionExtend && !opts.Shorten {
		if left, refused := shortenedEverywhere(h, opts.TTL); refused {
			return stop(h.Value, actions.WouldShorten, nil, shortenRefusal(opts.Key, left, opts.TTL))
		}
	}
	if opts.Yes {
		return h.Value, nil
	}
	question := present.Sprintf("Release %s? [y/N] ", key)
	if opts.Action == actions.ActionExtend {
		question = present.Sprintf("Set the TTL of %s to %s? [y/N] ", key, present.Duration(opts.TTL))
	}
	ok, err := confirm(opts.IO.In, stderr, question)
	if err != nil {
		return stop(h.Value, actions.NoTerminal, nil, err)
	}
	if !ok {
		return stop(h.Value, actions.Declined, nil, withExit(exitOther, fmt.Errorf("not confirmed: %s not done, nothing changed", opts.Action)))
	}
	return h.Value, nil
}

// shortenedEverywhere reports whether a TTL of ttl would shorten the key on every instance that
// holds it, and what the first has left (-1: none): extend.lua leaves such an instance as it is
// and extends the others, so only then is nothing extended.
func shortenedEverywhere(h actions.Holding, ttl time.Duration) (left time.Duration, shortened bool) {
	for _, in := range h.Instances {
		switch {
		case !in.Exists:
		case in.PTTL >= 0 && in.PTTL <= ttl:
			return 0, false
		case !shortened:
			left, shortened = in.PTTL, true
		}
	}
	return left, shortened
}

// shortenRefusal is extend's answer to a --ttl below the TTL key has left (-1: none).
func shortenRefusal(key string, left, ttl time.Duration) error {
	has := "no expiry"
	if left >= 0 {
		has = present.Duration(left) + " left"
	}
	return withExit(exitUsage, fmt.Errorf("%s has %s: --ttl %s would shorten it; pass --allow-shorten to mean that, nothing changed",
		present.Escape(key), has, present.Duration(ttl)))
}

// confirm asks question on the terminal; anything but y/yes is No. It refuses when stdin is
// not a terminal: a script must say --yes (and should pin the holder with --expect).
func confirm(in io.Reader, out io.Writer, question present.Safe) (bool, error) {
	f, isFile := in.(*os.File)
	if !isFile || !term.IsTerminal(f.Fd()) {
		return false, withExit(exitUsage, errors.New("stdin is not a terminal, so nobody can confirm: pass --yes, "+
			"or --expect VALUE to act only on the value you have seen"))
	}
	printf(out, "%s", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		printf(out, "\n")
		return false, nil
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

func heldText(in actions.HeldValue, t connect.Target) present.Safe {
	switch {
	case in.Err != nil:
		return present.Sprintf("%s: could not be read: %s", in.Addr, t.Redact(in.Err.Error()))
	case !in.Exists:
		return present.Sprintf("%s: no key", in.Addr)
	}
	ttl := present.Never
	if in.PTTL >= 0 {
		ttl = present.Duration(in.PTTL)
	}
	return present.Sprintf("%s: %s, ttl %s", in.Addr, present.Quote(in.Value, 120), ttl)
}

// writeResult prints what an action did; now is the time the holder's age is measured at.
// expectGiven: the expected value is the operator's --expect, not one read just before, so a
// different value says only that it differs, not that the lock changed hands.
func writeResult(w io.Writer, res actions.Result, t connect.Target, now time.Time, expectGiven bool) error {
	key, seen := res.Key, present.Quote(res.Seen, 200)
	var line present.Safe
	switch res.Outcome {
	case actions.Released:
		line = present.Sprintf("released %s (value %s)", key, seen)
		switch res.Action {
		case actions.ActionReleaseHolder:
			line = present.Sprintf("released holder %s of %s (seen %s)", res.Holder, key, seen)
		case actions.ActionReleaseTogether:
			line = present.Sprintf("released %s together (value %s)", strings.Join(res.Keys, ", "), seen)
		}
	case actions.Extended:
		line = present.Sprintf("extended %s: ttl %s (value %s)", key, present.Duration(res.TTL), seen)
		if res.Action == actions.ActionExtendHolder {
			line = present.Sprintf("extended holder %s of %s: ttl %s (seen %s)", res.Holder, key, present.Duration(res.TTL), seen)
		}
	case actions.ChangedHands:
		line = present.Sprintf("not done: %s changed hands, now held by %s", key, present.Holder(res.Current, nil, now))
		switch {
		case res.Holder != "" && expectGiven:
			line = present.Sprintf("not done: holder %s of %s differs from --expect\n  --expect   %s", res.Holder, key, present.Quote(res.Seen, 0))
		case res.Holder != "":
			line = present.Sprintf("not done: holder %s of %s changed since it was read (it renewed into another level, re-entered or left)", res.Holder, key)
		case res.Action == actions.ActionReleaseTogether:
			other, held := actions.OtherKey(res)
			line = present.Sprintf("not done: %s holds %s, not %s: none of %s released\n  value now  %s",
				other, present.Holder(held, nil, now), seen, strings.Join(res.Keys, ", "), present.Quote(held, 0))
		case expectGiven:
			line = present.Sprintf("not done: the lock's value differs from --expect: %s is held by %s\n  --expect   %s",
				key, present.Holder(res.Current, nil, now), present.Quote(res.Seen, 0))
		}
	case actions.WouldShorten:
		line = present.Sprintf("not done: %s", shortenRefusal(key, res.TTLLeft, res.TTL))
		if res.Action == actions.ActionExtendHolder {
			line = present.Sprintf("not done: holder %s of %s has %s left, more than --ttl %s: a holder's lease is never shortened",
				res.Holder, key, present.Duration(res.TTLLeft), present.Duration(res.TTL))
		}
	case actions.AlreadyGone:
		line = present.Sprintf("not done: %s is already gone", key)
		if res.Holder != "" {
			line = present.Sprintf("not done: holder %s of %s is already gone", res.Holder, key)
		}
	case actions.NotALock:
		line = present.Sprintf("not done: %s is a %s, not a lock", key, res.Current)
	default:
		line = present.Sprintf("not done: %s: %s", key, res.Outcome)
	}
	if err := printf(w, "%s\n", line); err != nil {
		return err
	}
	if len(res.Instances) < 2 {
		if res.Outcome == actions.ChangedHands && res.Action != actions.ActionReleaseTogether { // the exact value, for a new --expect
			return printf(w, "  value now  %s\n", present.Quote(res.Current, 0))
		}
		return nil
	}
	for _, in := range res.Instances {
		if err := printf(w, "  %s  %s\n", in.Addr, instanceOutcomeText(in, t, expectGiven)); err != nil {
			return err
		}
	}
	return nil
}

func instanceOutcomeText(in actions.InstanceResult, t connect.Target, expectGiven bool) present.Safe {
	switch in.Outcome {
	case actions.ChangedHands:
		return present.Sprintf("%s: now %s", outcomeText(in.Outcome, expectGiven), present.Quote(in.Current, 0))
	case actions.WouldShorten:
		left := present.Safe("no expiry")
		if in.TTLLeft >= 0 {
			left = present.Sprintf("%s left", present.Duration(in.TTLLeft))
		}
		return present.Sprintf("not extended: it has %s, more than the new TTL", left)
	case actions.NotALock:
		return present.Sprintf("not a lock: %s", in.Current)
	case actions.Failed:
		return present.Sprintf("failed: %s", describeError(t, in.Err).Error())
	}
	return present.Sprintf("%s", outcomeText(in.Outcome, expectGiven))
}

// outcomeName is an outcome as --json writes it (and the audit records it): changed_hands only
// where the value was read just before the action (no --expect), value_differs where it was the
// operator's --expect.
func outcomeName(o actions.Outcome, expectGiven bool) string {
	return string(actions.Reported(o, expectGiven))
}

// outcomeText is outcomeName in words.
func outcomeText(o actions.Outcome, expectGiven bool) string {
	return strings.ReplaceAll(outcomeName(o, expectGiven), "_", " ")
}

// resultJSON is `release --json` / `extend --json` (docs/cli.md).
type resultJSON struct {
	Action     string               `json:"action"`
	Key        string               `json:"key"`
	Holder     *string              `json:"holder"`
	Keys       []string             `json:"keys"`
	Outcome    string               `json:"outcome"`
	Seen       string               `json:"seen"`
	Current    *string              `json:"current"`
	TTLMs      *int64               `json:"ttl_ms"`
	Instances  []instanceResultJSON `json:"instances"`
	AuditError *string              `json:"audit_error"`
}

type instanceResultJSON struct {
	Addr    string  `json:"addr"`
	Outcome string  `json:"outcome"`
	Current *string `json:"current"`
	Error   *string `json:"error"`
}

func writeResultJSON(w io.Writer, res actions.Result, t connect.Target, expectGiven bool) error {
	j := resultJSON{
		Action:    string(res.Action),
		Key:       present.Escape(res.Key),
		Holder:    optionalText(res.Holder),
		Keys:      escapedKeys(res.Keys),
		Outcome:   outcomeName(res.Outcome, expectGiven),
		Seen:      present.Escape(res.Seen),
		Current:   optionalText(res.Current),
		Instances: make([]instanceResultJSON, 0, len(res.Instances)),
	}
	if res.Action.Extends() {
		ms := res.TTL.Milliseconds()
		j.TTLMs = &ms
	}
	if res.AuditErr != nil {
		msg := t.Redact(res.AuditErr.Error())
		j.AuditError = &msg
	}
	for _, in := range res.Instances {
		ij := instanceResultJSON{Addr: in.Addr, Outcome: outcomeName(in.Outcome, expectGiven), Current: optionalText(in.Current)}
		if in.Err != nil {
			msg := describeError(t, in.Err).Error()
			ij.Error = &msg
		}
		j.Instances = append(j.Instances, ij)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}

// escapedKeys is keys as every key is printed (nil stays nil: JSON null).
func escapedKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, present.Escape(k))
	}
	return out
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	printed := present.Escape(s)
	return &printed
}

// resultExit maps an action's outcome to its exit code (docs/cli.md); expectGiven as for
// writeResult.
func resultExit(res actions.Result, expectGiven bool) error {
	key := present.Escape(res.Key)
	switch res.Outcome {
	case actions.ChangedHands:
		if expectGiven {
			return withExit(exitChanged, fmt.Errorf("%s: the lock's value differs from --expect: %s refused, nothing changed", key, res.Action))
		}
		return withExit(exitChanged, fmt.Errorf("%s changed hands: %s refused, nothing changed", key, res.Action))
	case actions.WouldShorten:
		return withExit(exitUsage, fmt.Errorf("%s: --ttl would shorten it: extend refused, nothing changed", key))
	case actions.AlreadyGone:
		return withExit(exitGone, fmt.Errorf("%s is already gone", key))
	case actions.NotALock:
		return withExit(exitOther, fmt.Errorf("%s is not a lock: not touched", key))
	}
	if res.Partial() {
		return withExit(exitPartial, fmt.Errorf("%s: %s on some instances only; see the lines above", key, res.Outcome))
	}
	return nil
}
