package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/ui"
)

// tuiOptions is `lockscope tui` (and `lockscope` alone): the live console on the terminal.
// The console owns the terminal (Bubble Tea): IO only receives the connection warnings
// printed before it opens.
type tuiOptions struct {
	IO   IOStreams
	Conn connection
}

// newTUICmd is `lockscope tui`: the live console. `lockscope` with no subcommand runs it too.
func newTUICmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Open the live lock console (what `lockscope` alone opens)",
		Long: "A live view of every lock under --pattern: holder, age, TTL counting down, re-entry, fence token;\n" +
			"force-release (compare-and-delete) and extend behind confirmation dialogs, the audit trail,\n" +
			"and locklib's live events. Press ? inside for the keys. --read-only hides the actions.",
		Args: cobra.NoArgs,
		RunE: tuiRunE(ios, getenv),
	}
}

// tuiRunE fills the console's options from the flags and runs it.
func tuiRunE(ios IOStreams, getenv func(string) string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		return runTUI(cmd.Context(), &tuiOptions{IO: ios, Conn: connectionFlags(cmd, getenv)})
	}
}

// runTUI connects and runs the console until the user quits.
func runTUI(ctx context.Context, opts *tuiOptions) error {
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go followLiveHeap(ctx)
	err = ui.Run(ctx, ui.Options{
		Target:     t,
		Scanner:    opts.Conn.scanner(t),
		Admin:      opts.Conn.admin(t),
		ReadOnly:   opts.Conn.ReadOnly,
		StuckAfter: opts.Conn.StuckAfter,
	})
	return describeError(t, err)
}
