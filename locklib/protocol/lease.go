package protocol

import (
	"strings"
)

// Mode is what a lease in a lease set grants: a read or a write level of a read-write lock,
// or one permit of a lease semaphore.
type Mode byte

// The modes, as the first byte of a LeaseMember.
const (
	ModeRead   Mode = 'r'
	ModeWrite  Mode = 'w'
	ModePermit Mode = 'p'
)

// String names the mode: "read", "write" or "permit".
func (m Mode) String() string {
	switch m {
	case ModeRead:
		return "read"
	case ModeWrite:
		return "write"
	case ModePermit:
		return "permit"
	}
	return "unknown"
}

// LeaseMember is one member of a lease set: the sorted set a read-write lock or a lease
// semaphore lives in (docs/value-format.md, "Lease sets"), scored by the lease's deadline
// (unix ms, the server's clock). Its text is "<mode>|<op>|<value>": the mode byte, the
// operation id of the Obtain or Acquire that holds the lease ("<client id>:<n>", no '|'),
// and a lock value without a count (node:trace:unix_ms:rand). Every member is one level:
// an owner's re-entry count is the number of its members (same mode, same Rand).
type LeaseMember struct {
	Mode  Mode
	Op    string
	Value Value
}

// String is the member as stored.
func (m LeaseMember) String() string {
	v := m.Value
	v.Count = 0
	return string(m.Mode) + "|" + m.Op + "|" + v.String()
}

// ParseLeaseMember reads a lease set member; ok is false for anything else (a zset member in
// no known layout).
func ParseLeaseMember(s string) (LeaseMember, bool) {
	if len(s) < 2 || s[1] != '|' {
		return LeaseMember{}, false
	}
	mode := Mode(s[0])
	if mode != ModeRead && mode != ModeWrite && mode != ModePermit {
		return LeaseMember{}, false
	}
	op, value, ok := strings.Cut(s[2:], "|")
	if !ok || !isOpID(op) {
		return LeaseMember{}, false
	}
	v, err := ParseValue(value)
	if err != nil || v.Count != 0 {
		return LeaseMember{}, false
	}
	return LeaseMember{Mode: mode, Op: op, Value: v}, true
}

// isOpID reports whether s is an operation id: 16 lowercase hex digits (the client id), ':',
// and a decimal counter.
func isOpID(s string) bool {
	client, n, ok := strings.Cut(s, ":")
	if !ok || !isRand(client) || n == "" || len(n) > 19 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}
