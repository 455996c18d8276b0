package scanner

// MatchGlob reports whether key matches a Redis glob pattern (the MATCH syntax of SCAN:
// *, ?, [abc], [^abc], [a-z], and \ to escape), so event hints and the console's filter
// match keys the same way SCAN does. path.Match differs ('/' is special there), hence this small matcher.
func MatchGlob(pattern, key string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(key); i++ {
				if MatchGlob(pattern[1:], key[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(key) == 0 {
				return false
			}
		case '[':
			if len(key) == 0 {
				return false
			}
			end, ok := matchClass(pattern, key[0])
			if !ok {
				return false
			}
			pattern, key = pattern[end:], key[1:]
			continue
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(key) == 0 || pattern[0] != key[0] {
				return false
			}
		}
		pattern, key = pattern[1:], key[1:]
	}
	return len(key) == 0
}

// matchClass matches c against the class at the start of pattern ("[...]") and returns the
// length of the class. An unterminated class runs to the end of the pattern, as in Redis.
func matchClass(pattern string, c byte) (end int, ok bool) {
	i := 1
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	matched := false
	for i < len(pattern) && pattern[i] != ']' {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			matched = matched || pattern[i] == c
		case i+2 < len(pattern) && pattern[i+1] == '-':
			lo, hi := pattern[i], pattern[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			matched = matched || lo <= c && c <= hi
			i += 2
		default:
			matched = matched || pattern[i] == c
		}
		i++
	}
	if i < len(pattern) {
		i++ // the closing ']'
	}
	return i, matched != negate
}
