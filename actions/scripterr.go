package actions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ScriptPermissionError says which command inside an action's script the Redis user may not
// run. Redis reports only "can't run this command ... on @user_script:<line>"; the line of our
// own script source names the command.
type ScriptPermissionError struct {
	Command string // upper case, e.g. "DEL"
	Err     error  // Redis' reply
}

func (e *ScriptPermissionError) Error() string {
	return fmt.Sprintf("NOPERM: the Redis user may not run %s (inside lockscope's script): %v", e.Command, e.Err)
}

func (e *ScriptPermissionError) Unwrap() error { return e.Err }

// DeniedCommand is the command the ACL refused (package connect names it in its message).
func (e *ScriptPermissionError) DeniedCommand() string { return e.Command }

var (
	scriptDenied = regexp.MustCompile(`can't run this command.*@user_script:(\d+)`)
	scriptCall   = regexp.MustCompile(`redis\.call\('([A-Za-z]+)'`)
)

// explainScriptError turns Redis' ACL refusal of a command inside source into a
// ScriptPermissionError; other errors come back unchanged.
func explainScriptError(err error, source string) error {
	m := scriptDenied.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	line, _ := strconv.Atoi(m[1])
	lines := strings.Split(source, "\n")
	if line < 1 || line > len(lines) {
		return err
	}
	call := scriptCall.FindStringSubmatch(lines[line-1])
	if call == nil {
		return err
	}
	return &ScriptPermissionError{Command: strings.ToUpper(call[1]), Err: err}
}

// isKeyPermissionError reports Redis' refusal of a command because of one of its keys (ACL key
// patterns); the command did not run.
func isKeyPermissionError(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM") && strings.Contains(err.Error(), "key")
}
