package cli

// exitcode.go is the one place that defines lockscope's exit codes (docs/cli.md lists them)
// and maps errors to them: the run functions return errors tagged with withExit, or pass
// what Redis or the connection said through describeError.

import (
	"errors"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/spf13/cobra"
)

// Exit codes: a contract with scripts (docs/cli.md); never renumber one.
const (
	exitOK          = 0
	exitOther       = 1
	exitUsage       = 2  // bad flag, bad argument, bad URL
	exitReadOnly    = 3  // refused by --read-only
	exitChanged     = 4  // the lock changed hands: nothing done
	exitGone        = 5  // the lock was already gone
	exitUnreachable = 6  // a Redis server could not be reached
	exitAuth        = 7  // authentication failed
	exitPermission  = 8  // the Redis user lacks an ACL permission
	exitPartial     = 9  // some Redlock instances or cluster nodes failed; the output says which
	exitUnsafe      = 10 // the demo saw two critical sections interleave (docs/demo.md)
)

// exitError carries a documented exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit tags err with an exit code.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode is the process exit code for err: its tagged code, else 1.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitOther
}

// describeError maps err, met while working on target, to one line with its exit code;
// target's passwords are removed from the message. Errors that already carry an exit code
// keep it (their message is redacted all the same).
func describeError(target connect.Target, err error) error {
	if err == nil {
		return nil
	}
	var tagged *exitError
	if errors.As(err, &tagged) {
		return &exitError{code: tagged.code, err: errors.New(target.Redact(err.Error()))}
	}
	switch {
	case errors.Is(err, actions.ErrReadOnly):
		return withExit(exitReadOnly, errors.New("refused: --read-only is set"))
	case errors.Is(err, actions.ErrBadRequest):
		return withExit(exitUsage, errors.New(target.Redact(err.Error())))
	}
	err = target.Classify(err)
	return withExit(connectionExit(err), err)
}

// connectionExit is the exit code of a classified connection error (connect.Error's kinds).
func connectionExit(err error) int {
	switch {
	case errors.Is(err, connect.ErrBadConfig):
		return exitUsage
	case errors.Is(err, connect.ErrAuth):
		return exitAuth
	case errors.Is(err, connect.ErrPermission):
		return exitPermission
	case errors.Is(err, connect.ErrUnreachable):
		return exitUnreachable
	}
	return exitOther
}

// usageArgs tags cobra's argument errors with the usage exit code.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return withExit(exitUsage, err)
		}
		return nil
	}
}
