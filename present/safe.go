package present

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SafeText makes s (text from Redis, or typed by someone: untrusted) safe to print on a terminal: printable UTF-8 is kept, a backslash becomes
// `\\`, control characters become \n, \t, \r or \xNN, invalid UTF-8 bytes become \xNN and other
// non-printable runes \uNNNN. When the result would exceed max runes (max > 0), it is cut and
// ends with a marker saying how many bytes of s were left out: "…(+123 bytes)".
func SafeText(s string, max int) string { return safeText(s, max, false) }

// safeMessage is SafeText for an error message, whole, leaving its backslashes as they are
// (see Sprintf).
func safeMessage(s string) string { return safeText(s, 0, true) }

func safeText(s string, max int, keepBackslash bool) string {
	if max <= 0 && isPlainPrintable(s, keepBackslash) || max > 0 && len(s) <= max && isPlainPrintable(s, keepBackslash) {
		return s // the common case allocates nothing
	}
	var sb strings.Builder
	runes := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := `\`
		if r != '\\' || !keepBackslash {
			piece = escapeRune(s[i], r, size)
		}
		n := utf8.RuneCountInString(piece)
		if max > 0 && runes+n > max {
			sb.WriteString("…(+")
			sb.WriteString(strconv.Itoa(len(s) - i))
			sb.WriteString(" bytes)")
			return sb.String()
		}
		sb.WriteString(piece)
		runes += n
		i += size
	}
	return sb.String()
}

func escapeRune(first byte, r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return `\x` + hex2(first)
	case r == '\\':
		return `\\`
	case r == '\n':
		return `\n`
	case r == '\t':
		return `\t`
	case r == '\r':
		return `\r`
	case r < 0x80 && (r < 0x20 || r == 0x7f):
		return `\x` + hex2(byte(r))
	case !unicode.IsPrint(r) && r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	case !unicode.IsPrint(r):
		return fmt.Sprintf(`\U%08x`, r)
	}
	return string(r)
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}

// isPlainPrintable reports whether s is printable ASCII without a backslash (unless
// backslashes are kept).
func isPlainPrintable(s string, keepBackslash bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' && !keepBackslash {
			return false
		}
	}
	return true
}

// clip cuts s to at most max runes (max > 0), ending with the marker SafeText uses,
// "…(+123 bytes)", and leaves it as read: for text composed into a line that SafeText renders
// later (the TUI's notices, escaped when drawn).
func clip(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	i := 0
	for n := 0; n < max; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…(+" + strconv.Itoa(len(s)-i) + " bytes)"
}
