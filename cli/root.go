// Package cli is lockscope's command line: one file per command, each an options struct (its
// flags, the IO it writes to, the connection it needs) and a run function that tests call
// in-process. The root command with no subcommand opens the console (package ui).
package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// IOStreams are where a command reads and writes: the process's streams, or buffers in tests.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Run executes the command line of the process and returns its exit code.
func Run(args []string) int {
	quietRedisLog()
	return run(args, IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
}

// run executes args with the given streams and environment: Run for the process, tests
// in-process. Errors are printed as one line on ErrOut; the result is the exit code.
func run(args []string, ios IOStreams, getenv func(string) string) int {
	return runContext(context.Background(), args, ios, getenv)
}

// runContext is run until ctx ends: a test stops a long-running command (the exporter) by
// cancelling it, as a signal does.
func runContext(ctx context.Context, args []string, ios IOStreams, getenv func(string) string) int {
	root := newRootCmd(ios, getenv)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	printf(ios.ErrOut, "lockscope: %s\n", err)
	return exitCode(err)
}

func newRootCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	env := &contextEnv{base: getenv}
	getenv = env.getenv // the commands see --context's password as $LOCKSCOPE_PASSWORD
	root := &cobra.Command{
		Use:           "lockscope",
		Short:         "Inspect, administer and demonstrate Redis distributed locks",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --context fills the flags not given first; then every value is checked.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := env.apply(cmd); err != nil {
				return err
			}
			return validateConnectionFlags(cmd)
		},
	}
	addConnectionFlags(root)
	addContextFlag(root)
	root.AddCommand(newContextsCmd(ios, env.base))
	root.AddCommand(newVersionCmd(ios))
	root.AddCommand(newLsCmd(ios, getenv), newShowCmd(ios, getenv), newReleaseCmd(ios, getenv),
		newExtendCmd(ios, getenv), newAuditCmd(ios, getenv), newExporterCmd(ios, getenv))
	root.AddCommand(newTUICmd(ios, env))
	root.AddCommand(newDemoCmd(ios, getenv))
	root.RunE = tuiRunE(ios, env) // `lockscope` alone opens the console
	root.Args = unknownCommand
	addTUIFlags(root)
	return root
}

// unknownCommand refuses arguments to the root command: they are a mistyped command, a usage
// error (exit code 2).
func unknownCommand(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return withExit(exitUsage, fmt.Errorf("unknown command %q (lockscope --help lists the commands)", args[0]))
	}
	return nil
}

// quietRedisLog stops go-redis logging failed dials on stderr by itself: lockscope reports
// them as one line instead, and the console must not have its screen written over.
func quietRedisLog() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
