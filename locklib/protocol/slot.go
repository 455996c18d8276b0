package protocol

import "strings"

// Slot is the Redis Cluster hash slot of key (0 to 16383): CRC16 (XMODEM) of its hash tag
// when it has one (hasHashTag's rule, the text between the first '{' and the first '}'
// after it), else of the whole key, modulo 16384. It is computed locally, so a caller can
// refuse keys that one script cannot touch together before anything is sent (a multi-key
// lock across slots); a lock key and its companions always share one (CompanionsInSlot).
func Slot(key string) int {
	return int(crc16(HashTag(key)) % 16384)
}

// HashTag is the part of key that Redis Cluster hashes (and redis.Ring shards by): the hash
// tag when key has one, else key itself.
func HashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	close := strings.IndexByte(key[open+1:], '}')
	if close <= 0 { // no '}', or "{}": no tag, the whole key is hashed
		return key
	}
	return key[open+1 : open+1+close]
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), Redis Cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
