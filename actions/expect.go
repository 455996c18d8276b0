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
// lines, which the scripts also take, unless a field holds '=' or a newline: ExpectFor says so).
func ExpectFor(l scanner.Lock) (string, error) {
	if l.Truncated || l.Format == scanner.FormatUnknown {
		return "", fmt.Errorf("%w: %s", ErrInexactValue, l.Key)
	}
	switch l.Type {
	case "string":
		return l.Value, nil
	case "hash":
		fields, ok := parseHashLines(l.Value)
		if !ok {
			return "", fmt.Errorf("%w: %s: ambiguous hash field", ErrInexactValue, l.Key)
		}
		return CanonicalHash(fields), nil
	}
	return "", fmt.Errorf("%w: %s is a %s, not a lock", ErrInexactValue, l.Key, l.Type)
}

// parseHashLines reads a hash as the scanner records it (and ls and show print it): one
// "field=value" line per field. ok is false where that layout is ambiguous: a line without
// '=', or a field twice (a field holding '=' or a newline cannot be told apart).
func parseHashLines(value string) (fields map[string]string, ok bool) {
	fields = map[string]string{}
	if value == "" {
		return fields, true
	}
	for _, line := range strings.Split(value, "\n") {
		f, v, found := strings.Cut(line, "=")
		if _, dup := fields[f]; !found || dup {
			return nil, false
		}
		fields[f] = v
	}
	return fields, true
}
