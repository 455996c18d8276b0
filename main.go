// Command lockscope inspects and administers Redis distributed locks: a TUI, a CLI and a demo.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the process exit code.
func run(args []string) int {
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
