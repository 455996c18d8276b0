package ui

import (
	"strings"

	"github.com/lockscope/lockscope/scanner"
)

// matcher is a compiled `/` filter. Text with a glob character (* ? [) is a Redis-style glob
// against the key, like the scanner's MATCH pattern; other text is a case-insensitive substring
// of the key, the holder node or the trace id.
type matcher struct {
	raw    string
	glob   bool
	needle string // lower-cased substring
}

func newMatcher(filter string) matcher {
	return matcher{
		raw:    filter,
		glob:   strings.ContainsAny(filter, "*?["),
		needle: strings.ToLower(filter),
	}
}

// empty reports whether the filter lets everything through.
func (m matcher) empty() bool { return m.raw == "" }

func (m matcher) match(key, node, trace string) bool {
	if m.raw == "" {
		return true
	}
	if m.glob {
		return scanner.MatchGlob(m.raw, key)
	}
	return containsFold(key, m.needle) || containsFold(node, m.needle) || containsFold(trace, m.needle)
}

// containsFold is strings.Contains(strings.ToLower(s), lowerNeedle) without allocating for
// ASCII text, which lock keys nearly always are: it runs once per lock per filter change.
func containsFold(s, lowerNeedle string) bool {
	if len(lowerNeedle) > len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Contains(strings.ToLower(s), lowerNeedle)
		}
	}
	n := len(lowerNeedle)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerNeedle[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
