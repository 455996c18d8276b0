// Package cli is lockscope's command line: one file per command, each an options struct and a
// run function that tests call in-process. The root command with no subcommand opens the
// console (package ui).
package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Run executes the command line and returns the process exit code.
func Run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "lockscope:", err)
	return exitCode(err)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "lockscope",
		Short:         "Inspect, administer and demonstrate Redis distributed locks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addConnectionFlags(root)
	root.AddCommand(newVersionCmd())
	root.AddCommand(newLsCmd(), newShowCmd(), newReleaseCmd(), newExtendCmd(), newAuditCmd())
	root.AddCommand(newTUICmd())
	root.AddCommand(newDemoCmd())
	root.RunE = runTUI // `lockscope` alone opens the console
	return root
}
