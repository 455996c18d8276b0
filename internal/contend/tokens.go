package contend

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// tokenCheckTimeout bounds porcupine's search per key; a cell's history is a few hundred
// acquisitions at most.
const tokenCheckTimeout = time.Minute

// obtained is one successful Obtain: the fencing token it returned, between its call and its
// return on the harness's clock.
type obtained struct {
	key       string
	token     int64
	call, ret time.Duration
}

// obtainLog records every successful Obtain of a cell.
type obtainLog struct {
	start time.Time
	mu    sync.Mutex
	ops   []obtained
}

func (o *obtainLog) since() time.Duration { return time.Since(o.start) }

func (o *obtainLog) add(op obtained) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, op)
}

// tokenModel: a key's fencing tokens, taken in an order that real time allows (an Obtain that
// returned before another was called comes first), strictly increase. That is what a fenced
// resource relies on, across a failover or an empty restart too: the counter may be lost
// there, and the server-time floor of the token is what must keep it going up.
var tokenModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, _, output any) (bool, any) {
		if t := output.(int64); t > state.(int64) {
			return true, t
		}
		return false, state
	},
	DescribeOperation: func(_, output any) string { return fmt.Sprintf("token %d", output) },
	DescribeState:     func(state any) string { return fmt.Sprintf("last token %d", state) },
}

// tokenOrderViolations checks each key's history of acquisitions against tokenModel with
// porcupine and says, per key, what it found wrong: "" for none.
func (o *obtainLog) tokenOrderViolations() []string {
	o.mu.Lock()
	ops := slices.Clone(o.ops)
	o.mu.Unlock()
	byKey := map[string][]porcupine.Operation{}
	for i, op := range ops {
		byKey[op.key] = append(byKey[op.key], porcupine.Operation{
			ClientId: i, Input: nil, Output: op.token, Call: int64(op.call), Return: int64(op.ret),
		})
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		switch porcupine.CheckOperationsTimeout(tokenModel, byKey[key], tokenCheckTimeout) {
		case porcupine.Illegal:
			out = append(out, fmt.Sprintf("%s: no order of its %d acquisitions that real time allows has increasing fencing tokens", key, len(byKey[key])))
		case porcupine.Unknown:
			out = append(out, fmt.Sprintf("%s: the token order of its %d acquisitions was not decided within %v", key, len(byKey[key]), tokenCheckTimeout))
		}
	}
	return out
}
