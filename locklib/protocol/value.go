package protocol

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Value is the decoded content of a lock key written by locklib:
//
//	<node>:<trace>:<unix_ms>:<rand>            plain lock
//	<node>:<trace>:<unix_ms>:<rand>:<count>    re-entrant lock, count >= 1
//
// ':' and '%' inside node and trace are percent-encoded, so locklib's own values always have
// exactly 4 (or 5) fields; docs/value-format.md is the reference.
type Value struct {
	Node       string    // who holds the lock (hostname by default)
	Trace      string    // the caller's trace id; "" when none ("-" on the wire)
	AcquiredAt time.Time // millisecond precision
	Rand       string    // 16 lowercase hex chars: what makes the value unique
	Count      int       // re-entry count; 0 for a plain (not re-entrant) lock
}

// ErrBadValue is returned by ParseValue for text that is not in locklib's format.
var ErrBadValue = errors.New("protocol: not a lockscope lock value")

// noTrace stands for "no trace id" on the wire.
const noTrace = "-"

// NewValue makes a fresh value for an acquisition now: Rand from crypto/rand.
func NewValue(node, trace string, now time.Time) Value {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("locklib: crypto/rand failed: " + err.Error())
	}
	return Value{Node: node, Trace: trace, AcquiredAt: time.UnixMilli(now.UnixMilli()), Rand: hex.EncodeToString(b[:])}
}

// String encodes v in the wire format.
func (v Value) String() string {
	var sb strings.Builder
	sb.WriteString(escapeField(v.Node))
	sb.WriteByte(':')
	switch {
	case v.Trace == "":
		sb.WriteString(noTrace)
	case v.Trace == noTrace:
		sb.WriteString("%2D") // a literal "-" trace must not read as "no trace"
	default:
		sb.WriteString(escapeField(v.Trace))
	}
	sb.WriteByte(':')
	sb.WriteString(strconv.FormatInt(v.AcquiredAt.UnixMilli(), 10))
	sb.WriteByte(':')
	sb.WriteString(v.Rand)
	if v.Count > 0 {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(v.Count))
	}
	return sb.String()
}

// AroundStamp splits an encoded value (String's output) around its timestamp field, so that
// a server can write the value stamped with its own clock as before + <unix ms> + after. The
// parts are substrings of s; ok is false when s has no timestamp field in the right place.
func AroundStamp(s string) (before, after string, ok bool) {
	rest, last, ok := cutLast(s)
	if !ok {
		return "", "", false
	}
	if !isRand(last) {
		if rest, last, ok = cutLast(rest); !ok || !isRand(last) {
			return "", "", false
		}
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	return s[:i+1], s[len(rest):], true
}

// Base is the value without its re-entry count: what stays the same across re-entries.
func (v Value) Base() string {
	v.Count = 0
	return v.String()
}

// WithoutCount is an encoded value without its re-entry count, as Base would write it, but
// cut out of s without decoding it: what stays the same while one holder keeps the lock
// (re-entries change only the count). A value without a count, or not in this format, is
// returned whole. The console compares holders with it on every census record that changed.
func WithoutCount(s string) string {
	rest, last, ok := cutLast(s)
	if !ok || isRand(last) {
		return s
	}
	if _, isCount := parseCount(last); isCount {
		if _, rand, ok := cutLast(rest); ok && isRand(rand) {
			return rest
		}
	}
	return s
}

// ParseValue decodes a value in locklib's format. It parses from the right so that values
// written by other code in the same layout, whose node holds raw ':' (an IPv6 address,
// host:port), still decode: everything left of the trace field is the node. It allocates
// nothing unless the value holds a %XX escape: Node, Trace and Rand are substrings of s, and
// a rejection is one of a few fixed errors, so the census can decode a million values,
// lockscope's or not, without garbage.
func ParseValue(s string) (Value, error) {
	rest, last, ok := cutLast(s)
	if !ok {
		return Value{}, errTooFewFields
	}
	var v Value
	if !isRand(last) {
		// Re-entrant form: the count is last, the random part before it.
		if v.Count, ok = parseCount(last); !ok {
			return Value{}, errNoRand
		}
		if rest, last, ok = cutLast(rest); !ok || !isRand(last) {
			return Value{}, errNoRand
		}
	}
	v.Rand = last
	rest, msText, ok := cutLast(rest)
	if !ok {
		return Value{}, errTooFewFields
	}
	ms, ok := parseMillis(msText)
	if !ok {
		return Value{}, errBadTime
	}
	v.AcquiredAt = time.UnixMilli(ms)
	node, trace, ok := cutLast(rest)
	if !ok {
		return Value{}, errTooFewFields
	}
	var err error
	if trace != noTrace {
		if v.Trace, err = unescapeField(trace); err != nil {
			return Value{}, err
		}
	}
	if v.Node, err = unescapeField(node); err != nil {
		return Value{}, err
	}
	return v, nil
}

// ParseValue's rejections, fixed so that rejecting allocates nothing.
var (
	errTooFewFields = fmt.Errorf("%w: too few fields", ErrBadValue)
	errNoRand       = fmt.Errorf("%w: no random part", ErrBadValue)
	errBadTime      = fmt.Errorf("%w: bad timestamp", ErrBadValue)
)

// cutLast splits s around its last ':'.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// parseMillis reads the unix_ms field as strconv.ParseInt reads it (an optional sign), but
// without ParseInt's allocated error for the census's foreign values; it must be >= 0.
func parseMillis(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := int64(s[i] - '0')
		if s[i] < '0' || s[i] > '9' || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, !neg || n == 0
}

// parseCount reads a re-entry count written as strconv.Itoa writes it: digits only, no
// leading zero, at least 1.
func parseCount(s string) (int, bool) {
	if s == "" || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		d := int(s[i] - '0')
		if s[i] < '0' || s[i] > '9' || n > (math.MaxInt-d)/10 {
			return 0, false // strconv.Atoi's error would allocate
		}
		n = n*10 + d
	}
	return n, true
}

func isRand(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// escapeField percent-encodes the two bytes that would break the layout.
func escapeField(s string) string {
	if !strings.ContainsAny(s, ":%") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			sb.WriteString("%25")
		case ':':
			sb.WriteString("%3A")
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

// unescapeField decodes any %XX escape (other writers may escape more than we do).
func unescapeField(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			sb.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: truncated escape in %q", ErrBadValue, s)
		}
		b, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadValue, s)
		}
		sb.WriteByte(b[0])
		i += 2
	}
	return sb.String(), nil
}

// BaseOf is a lock value without its re-entry count (value itself when it has none or is
// not in locklib's format): what stays the same across re-entries, like Value.Base.
func BaseOf(value string) string {
	if v, err := ParseValue(value); err == nil && v.Count > 0 {
		return value[:strings.LastIndexByte(value, ':')]
	}
	return value
}
