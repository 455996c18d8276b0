package present

import (
	"fmt"
	"reflect"
	"strings"
	"time"
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
// that it trusts nothing but Safe parts (composed by Sprintf or Quote) and numbers: a string,
// a value of any named string type (an audit record's action and result come from Redis too),
// a Cut (also cut) and anything else it would print as text go through SafeText first. An
// error's message is escaped the same way except that its backslashes stay: Go's own errors
// (flag parsing, %q in a message) already quote with them, and doubling would garble them.
func Sprintf(format string, args ...any) Safe {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case Safe:
			safe[i] = string(a)
		case Cut:
			safe[i] = SafeText(a.Text, a.Max)
		case error:
			safe[i] = safeMessage(a.Error())
		case time.Duration, time.Time:
			safe[i] = a
		default:
			switch v := reflect.ValueOf(a); v.Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
				safe[i] = a
			case reflect.String:
				safe[i] = SafeText(v.String(), 0)
			default:
				safe[i] = SafeText(fmt.Sprint(a), 0)
			}
		}
	}
	return Safe(fmt.Sprintf(format, safe...))
}

// Quote is text from outside in double quotes, made safe by SafeText and cut at max runes (max
// <= 0: whole), with a `"` in it escaped too, so the quotes show where it ends. Use it instead
// of %q, which would escape SafeText's escapes again.
func Quote(s string, max int) Safe {
	return Safe(`"` + strings.ReplaceAll(SafeText(s, max), `"`, `\"`) + `"`)
}
