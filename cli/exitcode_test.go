package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
)

func TestDescribeErrorCodes(t *testing.T) {
	cases := []struct {
		err  error
		code int
		says string
	}{
		{actions.ErrReadOnly, exitReadOnly, "read-only"},
		{fmt.Errorf("x: %w", actions.ErrBadRequest), exitUsage, "bad request"},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), exitAuth, "authentication failed"},
		{errors.New("NOAUTH Authentication required."), exitAuth, "authentication failed"},
		{errors.New("NOPERM User u has no permissions to run the 'scan' command"), exitPermission, "may not run SCAN"},
		{errors.New("NOPERM this user has no permissions to access one of the keys used as arguments"), exitPermission, "may not access these keys"},
		{&actions.ScriptPermissionError{Command: "DEL", Err: errors.New("ERR ... @user_script:48")}, exitPermission, "may not run DEL"},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), exitUnreachable, "cannot reach Redis"},
		{withExit(exitChanged, errors.New("changed")), exitChanged, "changed"},
		{errors.New("something else"), exitOther, "something else"},
	}
	for _, c := range cases {
		got := describeError(connect.Target{}, c.err)
		if exitCode(got) != c.code || !strings.Contains(got.Error(), c.says) {
			t.Errorf("describeError(%v) = %d %q, want %d containing %q", c.err, exitCode(got), got, c.code, c.says)
		}
	}
}
