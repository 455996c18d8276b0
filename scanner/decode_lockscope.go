package scanner

import "github.com/lockscope/lockscope/locklib/protocol"

// decodeLockscope decodes locklib's layout (protocol.ParseValue, docs/value-format.md) into l.
// Node and Trace are substrings of v unless v holds a %XX escape: a census of a million locks
// keeps one copy of each value, and decoding allocates nothing.
func decodeLockscope(l *Lock, v string) bool {
	parsed, err := protocol.ParseValue(v)
	if err != nil {
		return false
	}
	l.Node, l.Trace, l.Reentry, l.AcquiredAt = parsed.Node, parsed.Trace, parsed.Count, parsed.AcquiredAt
	return true
}
