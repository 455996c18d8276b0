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
	return append(b, "]}\n"...)
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
			return appendEncodedString(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendEncodedString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
