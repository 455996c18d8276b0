package present

import "fmt"

// Safe is text that may be printed as is: composed by Sprintf, so every piece of it from
// outside has been through SafeText.
type Safe string

// Cut is text from outside printed at most Max runes long, with SafeText's marker when cut.
type Cut struct {
	Text string
	Max  int
}

// Sprintf is the one way the CLI renders a line of text output: like fmt.Sprintf, except that
// every string argument is taken as text from outside (Redis, the command line) and made safe
// with SafeText first, and a Cut argument is made safe and cut. A Safe argument (a part
// composed by Sprintf) and values of other types (numbers, durations, lockscope's own named
// string types such as scanner.Format) are formatted as fmt does. So a %q of a string argument
// quotes its escaped form: `"\\x1b[2J"`.
func Sprintf(format string, args ...any) Safe {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			safe[i] = SafeText(a, 0)
		case Cut:
			safe[i] = SafeText(a.Text, a.Max)
		case Safe:
			safe[i] = string(a)
		default:
			safe[i] = a
		}
	}
	return Safe(fmt.Sprintf(format, safe...))
}
