package actions

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

//go:embed together.lua
var togetherLua string

var (
	togetherSource = protocol.LuaLibrary() + togetherLua
	togetherScript = redis.NewScript(togetherSource)
)

// ReleaseTogether deletes every key of a multi-key lock (keys taken together by one
// ObtainMulti: they all hold the same value, expect) in one script, all or nothing: when any
// of them holds another value, none is deleted (ChangedHands). Keys already gone are passed over. Each key deleted wakes its
// first live waiter. On a cluster the keys must share one hash slot, as ObtainMulti's do:
// keys across slots are refused with ErrBadRequest before anything is sent. One audit record,
// with every key. OtherKey reads a refusal.
func (a *Admin) ReleaseTogether(ctx context.Context, keys []string, expect, reason string) (Result, error) {
	res := Result{Action: ActionReleaseTogether, Keys: keys, Seen: expect}
	if len(keys) > 0 {
		res.Key = keys[0]
	}
	if a.opts.ReadOnly {
		return res, ErrReadOnly
	}
	if len(keys) < 2 || slices.Contains(keys, "") || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
		return res, fmt.Errorf("%w: a release together names two keys or more, each once: %q", ErrBadRequest, keys)
	}
	if a.target.Mode == connect.Cluster {
		for _, k := range keys[1:] {
			if protocol.Slot(k) != protocol.Slot(keys[0]) {
				return res, fmt.Errorf("%w: %s (slot %d) and %s (slot %d) are in different Redis Cluster hash slots: "+
					"no multi-key lock holds both (ObtainMulti refuses them); release each on its own",
					ErrBadRequest, keys[0], protocol.Slot(keys[0]), k, protocol.Slot(k))
			}
		}
	}
	wake := a.target.Mode != connect.Cluster || !slices.ContainsFunc(keys, func(k string) bool { return !protocol.CompanionsInSlot(k) })
	scriptKeys := slices.Clone(keys)
	if wake {
		for _, k := range keys {
			scriptKeys = append(scriptKeys, protocol.WaitQueueKey(k), protocol.WaitPresenceKey(k))
		}
	}
	args := []any{expect, strconv.Itoa(len(keys)), map[bool]string{true: "1", false: "0"}[wake]}
	err := a.runEverywhere(ctx, &res, togetherScript, togetherSource, Released, scriptKeys, args, reason)
	return res, err
}

// OtherKey reads a refused ReleaseTogether's Current (res.Outcome ChangedHands): the key that
// held something else, and what (its value, or its type when it is no string).
func OtherKey(res Result) (key, held string) {
	at, held, _ := strings.Cut(res.Current, "\n")
	i, err := strconv.Atoi(at)
	if err != nil || i < 1 || i > len(res.Keys) {
		return "", res.Current
	}
	return res.Keys[i-1], held
}
