package actions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Holding is what a key holds right now, read in full (no 4 KiB cap, hashes in canonical
// form), so that Value can be passed back as the expect argument of Release or Extend.
type Holding struct {
	Key string
	// Value is the value held by the most instances that have the key ("" when none has it);
	// ties go to the earlier instance. Exists is false when no instance has the key.
	Value     string
	Exists    bool
	Instances []HeldValue // per instance, in target order
}

// HeldValue is the content of the key on one instance.
type HeldValue struct {
	Addr   string
	Exists bool
	Type   string        // Redis type: "string", "hash", or another type (not a lock)
	Value  string        // string value, or CanonicalHash of a hash; "" for other types
	PTTL   time.Duration // negative: no expiry (go-redis maps PTTL -1 to -1ns); meaningless when !Exists
	Err    error         // the read failed on this instance
}

// Peek reads key on every instance. It is allowed in read-only mode and writes nothing. The
// error is non-nil only when no instance could be read (the first instance's error, wrapped).
func (a *Admin) Peek(ctx context.Context, key string) (Holding, error) {
	h := Holding{Key: key, Instances: make([]HeldValue, len(a.target.Clients))}
	var wg sync.WaitGroup
	for i, c := range a.target.Clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, a.opts.InstanceTimeout)
			defer cancel()
			h.Instances[i] = peekOne(ctx, c, key)
			h.Instances[i].Addr = a.addr(i)
		})
	}
	wg.Wait()

	counts := map[string]int{}
	best := -1
	var firstErr error
	for i, in := range h.Instances {
		if in.Err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("read %s on %s: %w", key, in.Addr, in.Err)
			}
			continue
		}
		if !in.Exists {
			continue
		}
		counts[in.Value]++
		if best < 0 || counts[in.Value] > counts[h.Instances[best].Value] {
			best = i
		}
	}
	if best >= 0 {
		h.Value, h.Exists = h.Instances[best].Value, true
	}
	answered := 0
	for _, in := range h.Instances {
		if in.Err == nil {
			answered++
		}
	}
	if answered == 0 {
		if firstErr == nil {
			firstErr = errors.New("actions: the target has no instances")
		}
		return h, firstErr
	}
	return h, nil
}

func peekOne(ctx context.Context, c redis.UniversalClient, key string) HeldValue {
	var out HeldValue
	var typ *redis.StatusCmd
	var pttl *redis.DurationCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		typ = p.Type(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil {
		out.Err = err
		return out
	}
	out.Type, out.PTTL = typ.Val(), pttl.Val()
	switch out.Type {
	case "none":
		out.Type = ""
		return out
	case "string":
		v, err := c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) { // vanished between the two reads
			return HeldValue{}
		}
		out.Value, out.Err = v, err
	case "hash":
		m, err := c.HGetAll(ctx, key).Result()
		if err == nil && len(m) == 0 {
			return HeldValue{}
		}
		out.Value, out.Err = CanonicalHash(m), err
	}
	out.Exists = out.Err == nil
	return out
}
