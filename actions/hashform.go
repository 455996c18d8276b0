package actions

import (
	"fmt"
	"slices"
	"strings"
)

// A hash lock (Redisson: field "<uuid>:<threadId>" -> re-entry count) has no single string
// value, so actions compare it through a canonical text form that can be shown, typed back
// with --expect, and parsed again without loss:
//
//	hash{<field>=<value>,<field>=<value>}
//
// fields sorted bytewise; in fields and values the bytes % , = { } and every byte outside
// printable ASCII are written %XX (upper-case hex). A Redisson lock reads e.g.
// hash{8743c9c0-0795-4907-87fd-6c719a6b4586:1=2}.
//
// The compare is exact for hashes (same fields, same values, nothing more). The one ambiguity
// left: a string key whose bytes equal the canonical form of the expected hash also matches.

const (
	hashPrefix = "hash{"
	hashSuffix = "}"
)

// CanonicalHash is the canonical text form of a hash's content.
func CanonicalHash(fields map[string]string) string {
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	slices.Sort(names)
	var sb strings.Builder
	sb.WriteString(hashPrefix)
	for i, f := range names {
		if i > 0 {
			sb.WriteByte(',')
		}
		escapeHashPart(&sb, f)
		sb.WriteByte('=')
		escapeHashPart(&sb, fields[f])
	}
	sb.WriteString(hashSuffix)
	return sb.String()
}

// ParseCanonicalHash decodes text made by CanonicalHash. ok is false for any other text.
func ParseCanonicalHash(s string) (fields map[string]string, ok bool) {
	if !strings.HasPrefix(s, hashPrefix) || !strings.HasSuffix(s, hashSuffix) || len(s) < len(hashPrefix)+len(hashSuffix) {
		return nil, false
	}
	body := s[len(hashPrefix) : len(s)-len(hashSuffix)]
	fields = map[string]string{}
	if body == "" {
		return fields, true
	}
	for _, pair := range strings.Split(body, ",") {
		rawField, rawValue, found := strings.Cut(pair, "=")
		if !found {
			return nil, false
		}
		f, err1 := unescapeHashPart(rawField)
		v, err2 := unescapeHashPart(rawValue)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		if _, dup := fields[f]; dup {
			return nil, false
		}
		fields[f] = v
	}
	return fields, true
}

func escapeHashPart(sb *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || strings.IndexByte("%,={}", c) >= 0 {
			fmt.Fprintf(sb, "%%%02X", c)
			continue
		}
		sb.WriteByte(c)
	}
}

func unescapeHashPart(s string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if c < 0x20 || c >= 0x7f || strings.IndexByte(",={}", c) >= 0 {
				return "", fmt.Errorf("unescaped byte %#x", c)
			}
			sb.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape")
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad escape")
		}
		sb.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return sb.String(), nil
}

// unhex accepts only upper-case hex, so each content has exactly one encoding.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
