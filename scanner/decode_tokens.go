package scanner

import "encoding/base64"

// Random-token formats of peer libraries: the value only identifies the holder, it names no
// node or time.

// isRedsyncToken: go-redsync writes base64.StdEncoding of 16 random bytes (24 chars, "==").
func isRedsyncToken(v string) bool {
	if len(v) != 24 {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v)
	return err == nil && len(b) == 16
}

// bsmTokenLen is the length of bsm/redislock's token: raw URL base64 of 16 bytes.
const bsmTokenLen = 22

// isBSMValue: bsm/redislock writes its 22-char token immediately followed by the caller's
// metadata (Lock.Meta). Strict decoding rejects a last char whose unused bits are set, which
// random text of that alphabet fails 15 times in 16.
func isBSMValue(v string) bool {
	if len(v) < bsmTokenLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v[:bsmTokenLen])
	if err != nil || len(b) != 16 {
		return false
	}
	return true
}

// isUUID accepts the canonical 8-4-4-4-12 hex form, either case.
func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch i {
		case 8, 13, 18, 23:
			if v[i] != '-' {
				return false
			}
		default:
			if !isHexDigit(v[i]) {
				return false
			}
		}
	}
	return true
}

// isHexToken accepts an even number (16 to 128) of hex digits: random tokens such as
// node-redlock's 32 hex chars. Shorter runs of digits are too likely to be something else.
func isHexToken(v string) bool {
	if len(v) < 16 || len(v) > 128 || len(v)%2 != 0 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isHexDigit(v[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
