package locklib

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// eventPrefix writes what json.Marshal writes, less the closing brace.
func TestEventPrefixIsMarshal(t *testing.T) {
	texts := []string{"", "web-1", "lock:order:1001", `a"b\c`, "<&>", "a&b", "x>y", "tab\there", "ünïcode", "bad\xffutf8", "n:-:1:0123456789abcdef"}
	numbers := []int64{0, 1, -1, 1796100792536048, math.MaxInt64}
	for i := range 500 {
		pick := func(k int) string { return texts[(i*7+k*3+i/5)%len(texts)] }
		num := func(k int) int64 { return numbers[(i*3+k*5+i/7)%len(numbers)] }
		e := protocol.Event{Type: pick(0), Key: pick(1), Value: pick(2), Mode: pick(6), Node: pick(3), Trace: pick(4),
			Token: num(0), TTLMs: num(1), WaitMs: num(2), HoldMs: num(3), Waiters: num(4), Reason: pick(5), AtMs: num(5)}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventPrefix(e) + "}"; got != string(want) {
			t.Fatalf("eventPrefix(%+v) = %s, json.Marshal = %s", e, got, want)
		}
	}
}
