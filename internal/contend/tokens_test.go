package contend

import (
	"strings"
	"testing"
	"time"
)

// TestTokenOrder: porcupine accepts overlapping Obtains in either order and refuses a token
// that is not above one returned before its Obtain was called (what a counter lost in a
// failover would give without the server-time floor).
func TestTokenOrder(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	log := func(ops ...obtained) *obtainLog { return &obtainLog{ops: ops} }

	concurrent := log(
		obtained{key: "a", token: 20, call: ms(0), ret: ms(10)},
		obtained{key: "a", token: 10, call: ms(5), ret: ms(15)}, // overlaps the first: may come before it
		obtained{key: "a", token: 30, call: ms(20), ret: ms(25)},
		obtained{key: "b", token: 5, call: ms(0), ret: ms(1)}, // another key: its own order
	)
	if v := concurrent.tokenOrderViolations(); len(v) != 0 {
		t.Fatalf("a legal history refused: %v", v)
	}
	wentBack := log(
		obtained{key: "a", token: 1796000000000000, call: ms(0), ret: ms(10)},
		obtained{key: "a", token: 1796000000000001, call: ms(20), ret: ms(30)},
		obtained{key: "a", token: 3, call: ms(40), ret: ms(50)}, // the new master's counter, no floor
	)
	v := wentBack.tokenOrderViolations()
	if len(v) != 1 || !strings.HasPrefix(v[0], "a: no order of its 3 acquisitions") {
		t.Fatalf("a token that went back: %v", v)
	}
	repeated := log(
		obtained{key: "a", token: 7, call: ms(0), ret: ms(10)},
		obtained{key: "a", token: 7, call: ms(20), ret: ms(30)},
	)
	if v := repeated.tokenOrderViolations(); len(v) != 1 {
		t.Fatalf("a token given twice: %v", v)
	}
}
