package cli

import (
	"errors"

	"github.com/lockscope/lockscope/present"
)

// Every line the CLI prints is rendered by present.Sprintf, which escapes each string
// argument (keys, values, holders from Redis; keys from the command line), so no text from
// outside reaches the terminal unescaped. JSON output escapes through encoding/json and
// present.SafeText on the values (docs/cli.md).

// errorf is fmt.Errorf for a message that names text from outside, escaped like every line
// the CLI prints (it wraps nothing).
func errorf(format string, args ...any) error {
	return errors.New(string(present.Sprintf(format, args...)))
}
