package cli

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// lockJSON is one line of `ls --json` and the base of `show --json`. Text from Redis (key,
// node, trace, values) is in present.Escape's form, which every command takes back. The field set is a
// contract with scripts (docs/cli.md): change it only by adding to show's extension.
// appendTo writes it as encoding/json does; TestLockJSONAppendsAsEncodingJSON holds them
// to the same bytes.
type lockJSON struct {
	Key        string         `json:"key"`
	Format     string         `json:"format"`
	Node       string         `json:"node"`
	Trace      string         `json:"trace"`
	AcquiredAt *string        `json:"acquired_at"`
	AgeMs      *int64         `json:"age_ms"`
	TTLMs      int64          `json:"ttl_ms"`
	Reentry    *int           `json:"reentry"`
	Fence      *int64         `json:"fence"`
	Value      string         `json:"value"`
	Instances  []instanceJSON `json:"instances"`
	Kind       string         `json:"kind"`
	Shared     *sharedJSON    `json:"shared"`
}

// sharedJSON is a shared primitive's holders, permits and waiters (scanner.Shared); null for
// an exclusive lock. Texts from Redis are escaped (a Redisson permit's raw id bytes too, as
// \xNN: the form release takes back).
type sharedJSON struct {
	Mode         *string            `json:"mode"`
	Holders      []sharedHolderJSON `json:"holders"`
	HoldersKnown bool               `json:"holders_known"`
	Limit        *int               `json:"limit"`
	Available    *int               `json:"available"`
	InUse        *int               `json:"in_use"`
	Expired      int                `json:"expired"`
	Waiters      []sharedWaiterJSON `json:"waiters"`
	Truncated    bool               `json:"truncated"`
}

type sharedHolderJSON struct {
	ID         string      `json:"id"`
	Mode       string      `json:"mode"`
	Count      int         `json:"count"`
	TTLMs      int64       `json:"ttl_ms"`
	Expired    bool        `json:"expired"`
	Node       string      `json:"node"`
	Trace      string      `json:"trace"`
	AcquiredAt *string     `json:"acquired_at"`
	Field      string      `json:"field"`
	Leases     []leaseJSON `json:"leases"`
}

type leaseJSON struct {
	Member     string `json:"member"`
	DeadlineMs int64  `json:"deadline_ms"`
	TTLMs      int64  `json:"ttl_ms"`
}

type sharedWaiterJSON struct {
	ID    string `json:"id"`
	Mode  string `json:"mode"`
	TTLMs int64  `json:"ttl_ms"`
	Value string `json:"value"`
}

// toSharedJSON is sh as the JSON outputs show it; nil for an exclusive lock.
func toSharedJSON(sh *scanner.Shared) *sharedJSON {
	if sh == nil {
		return nil
	}
	j := &sharedJSON{HoldersKnown: !sh.HoldersUnknown, Expired: sh.Expired, Truncated: sh.Truncated,
		Holders: []sharedHolderJSON{}, Waiters: []sharedWaiterJSON{}}
	if sh.Mode != 0 {
		mode := sh.Mode.String()
		j.Mode = &mode
	}
	if sh.HasLimit {
		j.Limit = &sh.Limit
	}
	if sh.HasAvailable {
		j.Available = &sh.Available
	}
	if !sh.HoldersUnknown {
		j.InUse = &sh.InUse
	}
	for _, h := range sh.Holders {
		hj := sharedHolderJSON{ID: present.Escape(h.ID), Mode: h.Mode.String(), Count: h.Count, TTLMs: ttlMs(h.TTL, h.NoExpiry),
			Expired: h.Expired, Node: present.Escape(h.Node), Trace: present.Escape(h.Trace), Field: present.Escape(h.Field),
			Leases: make([]leaseJSON, len(h.Leases))}
		if !h.AcquiredAt.IsZero() {
			at := h.AcquiredAt.UTC().Format(time.RFC3339Nano)
			hj.AcquiredAt = &at
		}
		for i, le := range h.Leases {
			hj.Leases[i] = leaseJSON{Member: present.Escape(le.Member), DeadlineMs: le.Deadline, TTLMs: le.TTL.Milliseconds()}
		}
		j.Holders = append(j.Holders, hj)
	}
	for _, w := range sh.Waiters {
		j.Waiters = append(j.Waiters, sharedWaiterJSON{ID: present.Escape(w.ID), Mode: w.Mode.String(), TTLMs: w.TTL.Milliseconds(), Value: present.Escape(w.Value)})
	}
	return j
}

// instanceJSON is the key on one server; value and ttl_ms are null where the server does
// not hold the key or could not be read.
type instanceJSON struct {
	Addr  string  `json:"addr"`
	Value *string `json:"value"`
	TTLMs *int64  `json:"ttl_ms"`
}

// toLockJSON is l as `ls --json` shows it; now is the time of its read on its server's clock
// (scanner.Clocks), which ages are measured on.
func toLockJSON(l *scanner.Lock, now time.Time) lockJSON {
	j := lockJSON{
		Key:       present.Escape(l.Key),
		Format:    string(l.Format),
		Node:      present.Escape(l.Node),
		Trace:     present.Escape(l.Trace),
		TTLMs:     ttlMs(l.TTL, l.NoExpiry),
		Value:     present.Escape(l.Value),
		Instances: []instanceJSON{},
		Kind:      l.Kind().String(),
		Shared:    toSharedJSON(l.Shared),
	}
	if !l.AcquiredAt.IsZero() {
		at := l.AcquiredAt.UTC().Format(time.RFC3339Nano)
		j.AcquiredAt = &at
		if present.Skew(l, now) == 0 { // a stamp ahead of the server's clock has no age
			age := max(l.Age(now), 0).Milliseconds()
			j.AgeMs = &age
		}
	}
	if l.Reentry > 0 {
		j.Reentry = &l.Reentry
	}
	if l.HasFence {
		j.Fence = &l.Fence
	}
	for _, in := range l.PerInstance() {
		ij := instanceJSON{Addr: in.Addr}
		if in.Present && !in.Missing {
			v, ttl := present.Escape(in.Value), ttlMs(in.TTL, in.NoExpiry)
			ij.Value, ij.TTLMs = &v, &ttl
		}
		j.Instances = append(j.Instances, ij)
	}
	return j
}

// ttlMs is the TTL in ms, -1 for a key without expiry.
func ttlMs(ttl time.Duration, noExpiry bool) int64 {
	if noExpiry {
		return -1
	}
	return ttl.Milliseconds()
}

// appendLockJSON appends l's line of `ls --json`, newline included; now as toLockJSON's.
func appendLockJSON(b []byte, l *scanner.Lock, now time.Time) []byte {
	j := toLockJSON(l, now)
	return j.appendTo(b)
}

// appendTo appends j as json.Encoder (HTML escaping off) writes it, newline included,
// without its reflection: at a million locks, encoding/json cost more than the census.
func (j *lockJSON) appendTo(b []byte) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, j.Key)
	b = append(b, `,"format":`...)
	b = appendJSONString(b, j.Format)
	b = append(b, `,"node":`...)
	b = appendJSONString(b, j.Node)
	b = append(b, `,"trace":`...)
	b = appendJSONString(b, j.Trace)
	b = append(b, `,"acquired_at":`...)
	b = appendJSONStringOrNull(b, j.AcquiredAt)
	b = append(b, `,"age_ms":`...)
	b = appendJSONInt(b, j.AgeMs)
	b = append(b, `,"ttl_ms":`...)
	b = strconv.AppendInt(b, j.TTLMs, 10)
	b = append(b, `,"reentry":`...)
	if j.Reentry != nil {
		b = strconv.AppendInt(b, int64(*j.Reentry), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"fence":`...)
	b = appendJSONInt(b, j.Fence)
	b = append(b, `,"value":`...)
	b = appendJSONString(b, j.Value)
	b = append(b, `,"instances":[`...)
	for i, in := range j.Instances {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"addr":`...)
		b = appendJSONString(b, in.Addr)
		b = append(b, `,"value":`...)
		b = appendJSONStringOrNull(b, in.Value)
		b = append(b, `,"ttl_ms":`...)
		b = appendJSONInt(b, in.TTLMs)
		b = append(b, '}')
	}
	b = append(b, `],"kind":`...)
	b = appendJSONString(b, j.Kind)
	b = append(b, `,"shared":`...)
	if j.Shared == nil {
		b = append(b, "null"...)
	} else { // rare: encoding/json's own bytes
		b = appendEncoded(b, j.Shared)
	}
	return append(b, "}\n"...)
}

// appendJSONInt appends *n, or null.
func appendJSONInt(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

// appendJSONStringOrNull appends *s as a JSON string, or null.
func appendJSONStringOrNull(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSONString appends s as a JSON string, escaped as json.Encoder (HTML escaping off)
// escapes it: printable ASCII other than `"` and `\` as is, anything else by the encoder
// itself, so the escaping is encoding/json's own.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return appendEncoded(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEncoded appends v as json.Encoder (HTML escaping off) writes it, without its newline.
func appendEncoded(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and the JSON types here always encode
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
