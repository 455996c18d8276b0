package actions

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockscope/lockscope/scanner"
)

// ErrInexactValue is returned by ExpectFor when a scanner record does not carry the lock's
// exact value (cut at scanner.ValueCap, a hash read only in part, or not readable at all).
// Read it in full with Peek and let the operator confirm that value instead.
var ErrInexactValue = errors.New("actions: the census did not read the whole value")

// ExpectFor is the expect argument of Release and Extend for a lock as the scanner showed it:
// a string's raw value, or a hash's canonical form (scanner records a hash as "field=value"
// lines). Never pass Lock.Value of a hash directly: it would not match.
func ExpectFor(l scanner.Lock) (string, error) {
	if l.Truncated || l.Format == scanner.FormatUnknown {
		return "", fmt.Errorf("%w: %s", ErrInexactValue, l.Key)
	}
	switch l.Type {
	case "string":
		return l.Value, nil
	case "hash":
		fields := map[string]string{}
		if l.Value != "" {
			for _, line := range strings.Split(l.Value, "\n") {
				f, v, ok := strings.Cut(line, "=")
				if _, dup := fields[f]; !ok || dup {
					// A field holding '=' or a newline cannot be told apart in that layout.
					return "", fmt.Errorf("%w: %s: ambiguous hash field", ErrInexactValue, l.Key)
				}
				fields[f] = v
			}
		}
		return CanonicalHash(fields), nil
	}
	return "", fmt.Errorf("%w: %s is a %s, not a lock", ErrInexactValue, l.Key, l.Type)
}
