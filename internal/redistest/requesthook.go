package redistest

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// RequestHook is a go-redis hook (client.AddHook) that calls itself with the context of every
// command and pipeline the client sends: for tests of what a request runs under (a span, a
// value the caller put in its context).
type RequestHook func(ctx context.Context)

// DialHook is redis.Hook's; dialing is left alone.
func (h RequestHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook is redis.Hook's.
func (h RequestHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(ctx)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook is redis.Hook's.
func (h RequestHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h(ctx)
		return next(ctx, cmds)
	}
}
