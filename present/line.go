package present

import (
	"fmt"
	"reflect"
)

// Safe is text that may be printed as is: composed by Sprintf, so every piece of it from
// outside has been through SafeText.
type Safe string

// Cut is text from outside printed at most Max runes long, with SafeText's marker when cut.
type Cut struct {
	Text string
	Max  int
}

// Sprintf is the one way lockscope renders a line of text output: like fmt.Sprintf, except
// that every argument that is text is taken as text from outside (Redis, the command line, a
// server's error) and made safe with SafeText first: a string or a value of any named string
// type (an audit record's action and result come from Redis too), an error's message, and a
// Cut, which is also cut. Only a Safe argument (a part composed by Sprintf) is trusted as is;
// numbers, durations and times are formatted as fmt does. So a %q of a string argument quotes
// its escaped form: `"\\x1b[2J"`.
func Sprintf(format string, args ...any) Safe {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case Safe:
			safe[i] = string(a)
		case Cut:
			safe[i] = SafeText(a.Text, a.Max)
		case error:
			safe[i] = SafeText(a.Error(), 0)
		default:
			if v := reflect.ValueOf(a); v.Kind() == reflect.String {
				safe[i] = SafeText(v.String(), 0)
			} else {
				safe[i] = a
			}
		}
	}
	return Safe(fmt.Sprintf(format, safe...))
}
