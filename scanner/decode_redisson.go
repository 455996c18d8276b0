package scanner

import (
	"strconv"
	"strings"
)

// hashField is one field of a hash key as read (HSCAN).
type hashField struct {
	Name, Value string
}

// decodeHash decodes a Redisson lock: every field is <uuid>:<threadId> with the re-entry
// count as its value. Any other hash is opaque. The holder is shown as Node (the first owner
// for a read lock with several); Reentry is the sum of the counts.
func decodeHash(l *Lock, fields []hashField) {
	owners := make([]Owner, 0, len(fields))
	total := 0
	for _, f := range fields {
		n, err := strconv.Atoi(f.Value)
		if err != nil || n < 0 || !isRedissonOwner(f.Name) {
			l.Format = FormatOpaque
			return
		}
		owners = append(owners, Owner{ID: f.Name, Count: n})
		total += n
	}
	if len(owners) == 0 {
		l.Format = FormatOpaque
		return
	}
	l.Format = FormatRedisson
	l.Owners, l.Reentry, l.Node = owners, total, owners[0].ID
}

// isRedissonOwner checks <uuid>:<threadId>, the thread id a decimal number.
func isRedissonOwner(name string) bool {
	id, thread, ok := strings.Cut(name, ":")
	if !ok || !isUUID(id) || thread == "" {
		return false
	}
	for i := 0; i < len(thread); i++ {
		if thread[i] < '0' || thread[i] > '9' {
			return false
		}
	}
	return true
}

// hashText renders hash fields as the raw value: one "field=value" line each, capped at
// ValueCap bytes (truncated reports the cut).
func hashText(fields []hashField) (text string, truncated bool) {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(f.Name)
		sb.WriteByte('=')
		sb.WriteString(f.Value)
		if sb.Len() > ValueCap {
			return sb.String()[:ValueCap], true
		}
	}
	return sb.String(), false
}
