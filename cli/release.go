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
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

func newReleaseCmd() *cobra.Command {
	var req actionRequest
	cmd := &cobra.Command{
		Use:   "release KEY",
		Short: "Force-release a lock: delete it only if it still holds the value you saw",
		Long: "Force-release a lock with a compare-and-delete: the key is deleted only if it still holds the\n" +
			"expected value. Without --expect the current value is read, shown, and confirmed on the terminal\n" +
			"(or by --yes). Exit codes: 0 released, 4 changed hands (nothing deleted), 5 already gone.",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.action, req.key = actions.ActionRelease, args[0]
			req.expectGiven = cmd.Flags().Changed("expect")
			return runAction(cmd, req)
		},
	}
	addActionFlags(cmd, &req)
	return cmd
}

// addActionFlags registers the flags release and extend share.
func addActionFlags(cmd *cobra.Command, req *actionRequest) {
	cmd.Flags().StringVar(&req.expect, "expect", "", "act only if the lock holds exactly this value (no read, no prompt)")
	cmd.Flags().BoolVarP(&req.yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().StringVar(&req.reason, "reason", "", "why, recorded in the audit trail")
	cmd.Flags().BoolVar(&req.asJSON, "json", false, "print the result as one JSON object")
}

// actionRequest is one release or extend as the command line asked for it.
type actionRequest struct {
	action      actions.Action
	key         string
	expect      string
	expectGiven bool
	yes         bool
	reason      string
	ttl         time.Duration // extend
	asJSON      bool
}

// runAction is release and extend: refuse in read-only mode, find the expected value (flag or
// read + confirm), act through actions.Admin, print the result and map it to the exit code.
func runAction(cmd *cobra.Command, req actionRequest) error {
	if readOnlyFlag(cmd) {
		return withExit(exitReadOnly, fmt.Errorf("refused: --read-only is set and %s changes Redis; nothing changed", req.action))
	}
	t, closeTarget, err := openTarget(cmd)
	if err != nil {
		return err
	}
	defer closeTarget()
	admin := newAdmin(cmd, t)
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()

	expect := req.expect
	if !req.expectGiven {
		if expect, err = readAndConfirm(ctx, cmd, admin, req); err != nil {
			return err
		}
	}

	var res actions.Result
	if req.action == actions.ActionExtend {
		res, err = admin.Extend(ctx, req.key, expect, req.ttl, req.reason)
	} else {
		res, err = admin.Release(ctx, req.key, expect, req.reason)
	}
	if res.AuditErr != nil {
		defer fmt.Fprintln(stderr, "lockscope: warning: the audit record was not written:", scrub(res.AuditErr.Error()))
	}
	if err != nil {
		return describeError(err)
	}
	if req.asJSON {
		err = writeResultJSON(cmd.OutOrStdout(), res)
	} else {
		err = writeResult(cmd.OutOrStdout(), res)
	}
	if err != nil {
		return err
	}
	return resultExit(res)
}

// readAndConfirm reads the key's current value, shows it on stderr and asks the operator to
// confirm (unless --yes). It returns the value to expect.
func readAndConfirm(ctx context.Context, cmd *cobra.Command, admin *actions.Admin, req actionRequest) (string, error) {
	stderr := cmd.ErrOrStderr()
	h, err := admin.Peek(ctx, req.key)
	if err != nil {
		return "", describeError(err)
	}
	key := scanner.SafeText(req.key, 0)
	if !h.Exists {
		return "", withExit(exitGone, fmt.Errorf("%s is already gone: nothing to %s", key, req.action))
	}
	for _, in := range h.Instances {
		if in.Exists && in.Type != "string" && in.Type != "hash" {
			return "", withExit(exitOther, fmt.Errorf("%s is a %s, not a lock: not touched", key, in.Type))
		}
	}
	fmt.Fprintf(stderr, "%s is held by %s\n", key, holderText(h.Value))
	if len(h.Instances) > 1 {
		for _, in := range h.Instances {
			fmt.Fprintf(stderr, "  %s\n", heldText(in))
		}
	}
	if req.yes {
		return h.Value, nil
	}
	question := fmt.Sprintf("Release %s? [y/N] ", key)
	if req.action == actions.ActionExtend {
		question = fmt.Sprintf("Set the TTL of %s to %s? [y/N] ", key, req.ttl)
	}
	ok, err := confirm(cmd.InOrStdin(), stderr, question)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", withExit(exitOther, fmt.Errorf("not confirmed: %s not done, nothing changed", req.action))
	}
	return h.Value, nil
}

// confirm asks question on the terminal; anything but y/yes is No. It refuses when stdin is
// not a terminal: a script must say --yes (and should pin the holder with --expect).
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	f, isFile := in.(*os.File)
	if !isFile || !term.IsTerminal(f.Fd()) {
		return false, withExit(exitUsage, errors.New("stdin is not a terminal, so nobody can confirm: pass --yes, "+
			"or --expect VALUE to act only on the value you have seen"))
	}
	fmt.Fprint(out, question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(out)
		return false, nil
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// holderText describes a value: decoded when it is locklib's format, else the value itself.
func holderText(value string) string {
	safe := scanner.SafeText(value, 200)
	v, err := protocol.ParseValue(value)
	if err != nil {
		return fmt.Sprintf("value %q", safe)
	}
	trace := v.Trace
	if trace == "" {
		trace = "-"
	}
	return fmt.Sprintf("%s (trace %s, acquired %s, %s ago; value %q)", scanner.SafeText(v.Node, 0), scanner.SafeText(trace, 0),
		v.AcquiredAt.UTC().Format(time.RFC3339), shortDuration(time.Since(v.AcquiredAt)), safe)
}

func heldText(in actions.HeldValue) string {
	switch {
	case in.Err != nil:
		return fmt.Sprintf("%s: could not be read: %s", in.Addr, scrub(in.Err.Error()))
	case !in.Exists:
		return in.Addr + ": no key"
	}
	ttl := "no expiry"
	if in.PTTL >= 0 {
		ttl = "ttl " + shortDuration(in.PTTL)
	}
	return fmt.Sprintf("%s: %q, %s", in.Addr, scanner.SafeText(in.Value, 120), ttl)
}

func writeResult(w io.Writer, res actions.Result) error {
	key := scanner.SafeText(res.Key, 0)
	var line string
	switch res.Outcome {
	case actions.Released:
		line = fmt.Sprintf("released %s (value %q)", key, scanner.SafeText(res.Seen, 200))
	case actions.Extended:
		line = fmt.Sprintf("extended %s: ttl %s (value %q)", key, res.TTL, scanner.SafeText(res.Seen, 200))
	case actions.ChangedHands:
		line = fmt.Sprintf("not done: %s changed hands, now held by %s", key, holderText(res.Current))
	case actions.AlreadyGone:
		line = fmt.Sprintf("not done: %s is already gone", key)
	case actions.NotALock:
		line = fmt.Sprintf("not done: %s is a %s, not a lock", key, res.Current)
	default:
		line = fmt.Sprintf("not done: %s: %s", key, res.Outcome)
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	if len(res.Instances) < 2 {
		return nil
	}
	for _, in := range res.Instances {
		if _, err := fmt.Fprintf(w, "  %s  %s\n", in.Addr, instanceOutcomeText(in)); err != nil {
			return err
		}
	}
	return nil
}

func instanceOutcomeText(in actions.InstanceResult) string {
	switch in.Outcome {
	case actions.ChangedHands:
		return fmt.Sprintf("changed hands: now %q", scanner.SafeText(in.Current, 120))
	case actions.NotALock:
		return "not a lock: " + in.Current
	case actions.Failed:
		return "failed: " + describeError(in.Err).Error()
	}
	return strings.ReplaceAll(string(in.Outcome), "_", " ")
}

// resultJSON is `release --json` / `extend --json` (docs/cli.md).
type resultJSON struct {
	Action     string               `json:"action"`
	Key        string               `json:"key"`
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

func writeResultJSON(w io.Writer, res actions.Result) error {
	j := resultJSON{
		Action:    string(res.Action),
		Key:       scanner.SafeText(res.Key, 0),
		Outcome:   string(res.Outcome),
		Seen:      scanner.SafeText(res.Seen, 0),
		Current:   optionalText(res.Current),
		Instances: make([]instanceResultJSON, 0, len(res.Instances)),
	}
	if res.Action == actions.ActionExtend {
		ms := res.TTL.Milliseconds()
		j.TTLMs = &ms
	}
	if res.AuditErr != nil {
		msg := scrub(res.AuditErr.Error())
		j.AuditError = &msg
	}
	for _, in := range res.Instances {
		ij := instanceResultJSON{Addr: in.Addr, Outcome: string(in.Outcome), Current: optionalText(in.Current)}
		if in.Err != nil {
			msg := describeError(in.Err).Error()
			ij.Error = &msg
		}
		j.Instances = append(j.Instances, ij)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	safe := scanner.SafeText(s, 0)
	return &safe
}

// resultExit maps an action's outcome to its exit code (docs/cli.md).
func resultExit(res actions.Result) error {
	key := scanner.SafeText(res.Key, 0)
	switch res.Outcome {
	case actions.ChangedHands:
		return withExit(exitChanged, fmt.Errorf("%s changed hands: %s refused, nothing changed", key, res.Action))
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
