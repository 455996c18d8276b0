package scanner

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// decodeLockscope decodes locklib's layout (docs/value-format.md) into l. It parses from the
// right, like protocol.ParseValue, so a node holding raw ':' (IPv6, host:port) written by
// other code decodes. Node and Trace are substrings of v: a census of a million locks keeps
// one copy of each value, and decoding allocates nothing. A value with a %XX escape goes to
// protocol.ParseValue, the reference (FuzzLockscopeMatchesLocklib checks they agree).
func decodeLockscope(l *Lock, v string) bool {
	if strings.IndexByte(v, '%') >= 0 {
		parsed, err := protocol.ParseValue(v)
		if err != nil {
			return false
		}
		l.Node, l.Trace, l.Reentry, l.AcquiredAt = parsed.Node, parsed.Trace, parsed.Count, parsed.AcquiredAt
		return true
	}
	node, trace, ms, count, ok := splitLockscope(v)
	if !ok {
		return false
	}
	if trace == "-" { // locklib's "no trace id"
		trace = ""
	}
	l.Node, l.Trace, l.Reentry, l.AcquiredAt = node, trace, count, time.UnixMilli(ms)
	return true
}

// splitLockscope splits <node>:<trace>:<unix_ms>:<rand16hex>[:<count>] from the right,
// with protocol.ParseValue's rules: count a canonical decimal >= 1, unix_ms >= 0.
func splitLockscope(v string) (node, trace string, ms int64, count int, ok bool) {
	rest, last, ok := cutLast(v)
	if !ok {
		return "", "", 0, 0, false
	}
	if !isLockRand(last) {
		if count, ok = canonicalCount(last); !ok {
			return "", "", 0, 0, false
		}
		if rest, last, ok = cutLast(rest); !ok || !isLockRand(last) {
			return "", "", 0, 0, false
		}
	}
	rest, msField, ok := cutLast(rest)
	if !ok {
		return "", "", 0, 0, false
	}
	ms, err := strconv.ParseInt(msField, 10, 64)
	if err != nil || ms < 0 {
		return "", "", 0, 0, false
	}
	node, trace, ok = cutLast(rest)
	return node, trace, ms, count, ok
}

// cutLast splits s around its last ':'.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// isLockRand: the random part, 16 lowercase hex digits.
func isLockRand(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// canonicalCount parses a re-entry count written as strconv.Itoa would: digits only, no
// leading zero, at least 1.
func canonicalCount(s string) (int, bool) {
	if s == "" || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
