package cli

import (
	"fmt"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/spf13/cobra"
)

func newExtendCmd() *cobra.Command {
	var req actionRequest
	cmd := &cobra.Command{
		Use:   "extend KEY --ttl 30s",
		Short: "Set a lock's TTL, only if it still holds the value you saw (compare-and-PEXPIRE)",
		Long: "Set a lock's TTL with a compare-and-PEXPIRE: only if it still holds the expected value.\n" +
			"Without --expect the current value is read, shown, and confirmed on the terminal (or by --yes).\n" +
			"Exit codes: 0 extended, 4 changed hands (nothing changed), 5 already gone.",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.ttl < time.Millisecond { // PEXPIRE's unit
				return withExit(exitUsage, fmt.Errorf("--ttl is required and must be at least 1ms (e.g. --ttl 30s)"))
			}
			req.action, req.key = actions.ActionExtend, args[0]
			req.expectGiven = cmd.Flags().Changed("expect")
			return runAction(cmd, req)
		},
	}
	cmd.Flags().DurationVar(&req.ttl, "ttl", 0, "the new TTL, e.g. 30s (required)")
	addActionFlags(cmd, &req)
	return cmd
}
