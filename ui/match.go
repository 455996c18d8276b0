package ui

import "strings"

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
		return globMatch(m.raw, key)
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

// globMatch implements Redis's glob rules: * any run, ? one byte, [abc] [^a] [a-z] classes and
// \ escapes. An unterminated class matches its literal text.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			ok, rest, valid := matchClass(pattern[1:], s[0])
			if !valid { // no closing ']': the '[' is a literal
				if s[0] != '[' {
					return false
				}
				s, pattern = s[1:], pattern[1:]
				continue
			}
			if !ok {
				return false
			}
			s, pattern = s[1:], rest
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			s, pattern = s[1:], pattern[1:]
		}
	}
	return len(s) == 0
}

// matchClass matches c against the class body p (after '['); it returns whether c is in the
// class, the pattern after the closing ']', and whether a closing ']' exists.
func matchClass(p string, c byte) (ok bool, rest string, valid bool) {
	negate := false
	if len(p) > 0 && p[0] == '^' {
		negate, p = true, p[1:]
	}
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == ']':
			return ok != negate, p[i+1:], true
		case p[i] == '\\' && i+1 < len(p):
			i++
			if p[i] == c {
				ok = true
			}
		case i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo <= c && c <= hi {
				ok = true
			}
			i += 2
		default:
			if p[i] == c {
				ok = true
			}
		}
	}
	return false, "", false
}
