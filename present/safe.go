package present

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape is lockscope's one printed form of a key or value (text from Redis, or typed by
// someone: untrusted), safe on a terminal and reversible by Unescape: printable UTF-8 is kept, a
// backslash becomes `\\`, control characters become \n, \t, \r or \xNN, invalid UTF-8 bytes
// become \xNN and other non-printable runes \uNNNN (\UNNNNNNNN above U+FFFF). Printable ASCII
// without a backslash, the common case, is returned as is, without allocating.
func Escape(s string) string { return safeText(s, 0, false) }

// SafeText is Escape cut to at most max runes (max > 0; max <= 0: whole, the same as Escape).
// A cut result ends with a marker saying how many bytes of s were left out, "…(+123 bytes)",
// and no longer unescapes to s.
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

// Unescape is the inverse of Escape: it turns a key or value as lockscope prints it back into
// its bytes, so that every command takes what ls and show print. A backslash starts an escape:
// `\\`, `\n`, `\t`, `\r`, `\xNN` (one byte), `\uNNNN` and `\UNNNNNNNN` (a rune, as UTF-8), and
// `\"` (how Quote writes a quote). Text without a backslash is returned as is. Any other
// backslash is an error rather than a guess: a literal backslash is written `\\`.
func Unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf(`a lone \ at byte %d: a literal backslash is written \\`, i)
		}
		switch c := s[i+1]; c {
		case '\\', '"':
			b.WriteByte(c)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x', 'u', 'U':
			digits := hexDigits(c)
			hex := s[i+2 : min(len(s), i+2+digits)]
			n, err := strconv.ParseUint(hex, 16, 32)
			if err != nil || len(hex) < digits { // base 16: no sign, prefix or underscore gets through
				return "", fmt.Errorf(`bad escape %s at byte %d: \%c takes %d hex digits; a literal backslash is written \\`, s[i:i+2+len(hex)], i, c, digits)
			}
			switch r := rune(n); {
			case c == 'x':
				b.WriteByte(byte(n))
			case utf8.ValidRune(r):
				b.WriteRune(r)
			default:
				return "", fmt.Errorf("bad escape %s at byte %d: not a Unicode character", s[i:i+2+digits], i)
			}
			i += digits
		default:
			return "", fmt.Errorf(`unknown escape %s at byte %d: a literal backslash is written \\`, s[i:i+2], i)
		}
		i++
	}
	return b.String(), nil
}

// hexDigits is the number of hex digits after \x, \u or \U.
func hexDigits(escape byte) int {
	switch escape {
	case 'x':
		return 2
	case 'u':
		return 4
	}
	return 8
}
