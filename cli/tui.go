package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/config"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
	"github.com/lockscope/lockscope/ui"
)

// tuiOptions is `lockscope tui` (and `lockscope` alone): the live console on the terminal.
// The console owns the terminal (Bubble Tea): IO only receives the connection warnings
// printed before it opens.
type tuiOptions struct {
	IO   IOStreams
	Conn connection
	// ScanBudget is --scan-budget: the share of each server's time the background re-scan
	// may take (scanner.Options.ScanBudget).
	ScanBudget float64
	// Group is --group: the rule of the contention overview's key groups (keygroup.Parse).
	Group string
	// Label names the --context in the status bar; Contexts and Switch are the `:` line's.
	Label    string
	Contexts []string
	Switch   ui.SwitchFunc
}

const flagScanBudget = "scan-budget"

// addTUIFlags registers the console's own flags on cmd: `lockscope tui`, and the root
// command, which opens the console too.
func addTUIFlags(cmd *cobra.Command) {
	b := budgetValue(scanner.DefaultScanBudget)
	cmd.Flags().Var(&b, flagScanBudget, "share of each server's time the console's background re-scan may use, "+
		"as a percentage (2%) or a fraction (0.02); 100% re-scans at full speed")
	var group string
	addGroupFlag(cmd.Flags(), &group, "the contention overview (o)")
}

// newTUICmd is `lockscope tui`: the live console. `lockscope` with no subcommand runs it too.
func newTUICmd(ios IOStreams, env *contextEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Open the live lock console (what `lockscope` alone opens)",
		Long: "A live view of every lock under --pattern: holder, age, TTL counting down, re-entry, fence token;\n" +
			"force-release (compare-and-delete) and extend behind confirmation dialogs, the audit trail,\n" +
			"and locklib's live events. Press ? inside for the keys. --read-only hides the actions.",
		Args: usageArgs(cobra.NoArgs),
		RunE: tuiRunE(ios, env),
	}
	addTUIFlags(cmd)
	return cmd
}

// tuiRunE fills the console's options from the flags and runs it. The `:` line switches to
// the config file's contexts, read with the process's environment (env.base).
func tuiRunE(ios IOStreams, env *contextEnv) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		return runTUI(cmd.Context(), consoleOptions(cmd, ios, env))
	}
}

// consoleOptions are the console's options as cmd's flags (filled from --context by env)
// give them.
func consoleOptions(cmd *cobra.Command, ios IOStreams, env *contextEnv) *tuiOptions {
	budget := float64(*cmd.Flags().Lookup(flagScanBudget).Value.(*budgetValue))
	group, _ := cmd.Flags().GetString(flagGroup)
	opts := &tuiOptions{IO: ios, Conn: connectionFlags(cmd, env.getenv), ScanBudget: budget, Group: group}
	if name, _ := cmd.Flags().GetString(flagContext); name != "" {
		opts.Label = "context " + name
	}
	if file, err := config.Load(env.base); err == nil { // a bad file: --context said so already
		opts.Contexts = file.Names()
	}
	ownReadOnly := opts.Conn.ReadOnly && !env.readOnlyFromContext
	opts.Switch = consoleSwitch(opts.Conn, opts.Label, env.base, budget, ownReadOnly)
	return opts
}

// runTUI connects and runs the console until the user quits.
func runTUI(ctx context.Context, opts *tuiOptions) error {
	rule, err := groupRule(opts.Group)
	if err != nil {
		return err
	}
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go followLiveHeap(ctx)
	err = ui.Run(ctx, ui.Options{
		Target:      t,
		Scanner:     scanner.New(t, scanner.Options{Pattern: opts.Conn.Pattern, ScanBudget: opts.ScanBudget}),
		Admin:       opts.Conn.admin(t),
		ReadOnly:    opts.Conn.ReadOnly,
		StuckAfter:  opts.Conn.StuckAfter,
		TargetLabel: opts.Label,
		Contexts:    opts.Contexts,
		Switch:      opts.Switch,
		Group:       &rule,
	})
	return describeError(t, err)
}

// budgetValue is --scan-budget: a percentage ("2%", "0.5%") or a fraction ("0.02"), more
// than 0 and at most 100 %.
type budgetValue float64

func (b *budgetValue) String() string {
	return present.Percent(float64(*b))
}

func (b *budgetValue) Set(text string) error {
	number, isPercent := strings.CutSuffix(strings.TrimSpace(text), "%")
	v, err := strconv.ParseFloat(number, 64)
	if err != nil {
		return fmt.Errorf("%q is neither a percentage (2%%) nor a fraction (0.02)", text)
	}
	if isPercent {
		v /= 100
	}
	if !(v > 0 && v <= 1) {
		return errors.New("must be more than 0 and at most 100%")
	}
	*b = budgetValue(v)
	return nil
}

func (b *budgetValue) Type() string { return "budget" }
