package scanner

// decodeString fills l's holder fields from a string value and sets its Format. The order of
// the checks goes from the most specific layout to the least, so a value matches the format
// that explains the most of it; anything else is opaque.
func decodeString(l *Lock, v string) {
	switch {
	case decodeLockscope(l, v):
		l.Format = FormatLockscope
	case redissonSemaphore(l, v):
		l.Format = FormatRedisson
	case isRedsyncToken(v):
		l.Format = FormatRedsync
	case isUUID(v):
		l.Format = FormatUUID
	case isHexToken(v):
		l.Format = FormatHex
	case isBSMValue(v):
		l.Format = FormatBSM
	default:
		l.Format = FormatOpaque
	}
}

// decodeValue decodes whatever a key held: a string, a hash, a lease set, or another type.
func decodeValue(l *Lock, r *instRead) {
	l.Type = r.typ
	switch r.typ {
	case "string":
		decodeString(l, r.value)
	case "hash":
		decodeHash(l, r.fields)
	case "zset":
		if !decodeLeaseSet(l, r.members, r.membersCut, r.nowMs, r.limit, r.queue) {
			l.Format = FormatNotALock
		}
	case "":
		l.Format = FormatUnknown
	default:
		l.Format = FormatNotALock
	}
}
