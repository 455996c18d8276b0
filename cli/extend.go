package cli

import (
	"github.com/lockscope/lockscope/actions"
	"github.com/spf13/cobra"
)

func newExtendCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &actionOptions{IO: ios, Action: actions.ActionExtend}
	cmd := newActionCmd(&cobra.Command{
		Use:   "extend KEY --ttl 30s",
		Short: "Set a lock's TTL, only if it still holds the value you saw (compare-and-PEXPIRE)",
		Long: "Set a lock's TTL with a compare-and-PEXPIRE: only if it still holds the expected value.\n" +
			"Without --expect the current value is read, shown, and confirmed on the terminal (or by --yes).\n" +
			"It never shortens: a lock with more than --ttl left (or no expiry) is refused (exit 2) unless --allow-shorten.\n" +
			"With --holder ID, only that holder of a read-write lock or semaphore (never shortened).\n" +
			"Exit codes: 0 extended, 2 would shorten, 4 changed hands or differs from --expect (nothing changed), 5 already gone.",
	}, opts, getenv)
	cmd.Flags().DurationVar(&opts.TTL, "ttl", 0, "the new TTL, e.g. 30s (required)")
	cmd.Flags().BoolVar(&opts.Shorten, "allow-shorten", false, "also set a TTL below the one the lock has left, or on a lock without expiry")
	return cmd
}
