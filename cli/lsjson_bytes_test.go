package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/lockscope/lockscope/scanner"
)

// TestLockJSONEveryByteAsEncodingJSON: every single byte, every 2-byte string of the bytes
// that matter to UTF-8, and random binary keys and values are written as encoding/json wrote
// them before the hand-written appender.
func TestLockJSONEveryByteAsEncodingJSON(t *testing.T) {
	var texts []string
	for b := range 256 {
		texts = append(texts, string([]byte{byte(b)}))
	}
	special := []byte{0, 0x1f, '"', '\\', '<', 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff}
	for _, a := range special {
		for _, b := range special {
			texts = append(texts, string([]byte{a, b}))
		}
	}
	texts = append(texts, "\xed\xa0\x80", "\xe2\x80\xa8", "\xe2\x80", "\xef\xbf\xbd", "\xf0\x9f\x98", "\x1b[31m")
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		l := &scanner.Lock{Key: s, Format: scanner.FormatOpaque, Node: s, Trace: s, Value: s}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(toLockJSON(l, l.FetchedAt)); err != nil {
			t.Fatal(err)
		}
		got := appendLockJSON(nil, l, l.FetchedAt)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want.Bytes())
		}
		if !json.Valid(got) {
			t.Fatalf("%q: invalid JSON %s", s, got)
		}
	}
}
