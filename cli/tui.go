package cli

import (
	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/scanner"
	"github.com/lockscope/lockscope/ui"
)

// newTUICmd is `lockscope tui`: the live console. `lockscope` with no subcommand runs it too.
func newTUICmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Open the live lock console (what `lockscope` alone opens)",
		Long: "A live view of every lock under --pattern: holder, age, TTL counting down, re-entry, fence token;\n" +
			"force-release (compare-and-delete) and extend behind confirmation dialogs, the audit trail,\n" +
			"and locklib's live events. Press ? inside for the keys. --read-only hides the actions.",
		Args: cobra.NoArgs,
		RunE: runTUI,
	}
}

func runTUI(cmd *cobra.Command, _ []string) error {
	target, closeTarget, err := openTarget(cmd)
	if err != nil {
		return err
	}
	defer closeTarget()
	err = ui.Run(cmd.Context(), ui.Options{
		Target:     target,
		Scanner:    scanner.New(target, scanner.Options{Pattern: patternFlag(cmd)}),
		Admin:      newAdmin(cmd, target),
		ReadOnly:   readOnlyFlag(cmd),
		StuckAfter: stuckAfterFlag(cmd),
	})
	return describeError(err)
}
