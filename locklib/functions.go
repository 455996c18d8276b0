package locklib

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// scriptRunner sends locklib's scripts to one Redis server or cluster: as functions of
// functionLibrary (FCALL) while the server has them, loading the library where it is missing
// (a new server, FUNCTION FLUSH, a restart without persistence, a new cluster master), and as
// scripts (EVALSHA) from the first time the server shows that it has no Functions or that
// its ACL refuses them (FCALL or FUNCTION LOAD), for the rest of the client's life.
type scriptRunner struct {
	rdb    scriptConn
	server *functionsState // shared by the runners on one server (via clones of one client)
}

// functionsState is what a server showed of its Functions.
type functionsState struct {
	// scriptsOnly is set once FCALL or FUNCTION LOAD was refused as unknown or not permitted.
	scriptsOnly atomic.Bool
	// loading holds a token while a FUNCTION LOAD runs: one at a time, and a caller waits for
	// it no longer than its context allows (a load on a stalled server may outlive its caller).
	loading chan struct{}
	// loads counts the loads that succeeded: a call that found its function missing needs
	// no load of its own when one succeeded after the call was sent (calls that all find the
	// library flushed at once load it once, not once each).
	loads atomic.Uint64
}

// scriptConn is what a scriptRunner sends through: a client, or one connection of one
// (redis.Conn, for WithReplicas: singleStore.replicated).
type scriptConn interface {
	redis.Scripter
	FunctionLoad(ctx context.Context, code string) *redis.StringCmd
	Process(ctx context.Context, cmd redis.Cmder) error
}

func newScriptRunner(rdb redis.UniversalClient) *scriptRunner {
	return &scriptRunner{rdb: rdb, server: &functionsState{loading: make(chan struct{}, 1)}}
}

// via is a runner that sends through rdb, a clone of r's client or one of its connections,
// to the same server.
func (r *scriptRunner) via(rdb scriptConn) *scriptRunner {
	return &scriptRunner{rdb: rdb, server: r.server}
}

// run runs s with keys (strings, boxed once by the caller, which may send them again) and
// args. A call refused before it ran (the function missing, Functions unknown or not
// permitted) is sent again in the form that works, so each call runs once; a function missing
// that cannot be loaded now runs as a script.
func (r *scriptRunner) run(ctx context.Context, s *serverScript, keys []any, args ...any) *redis.Cmd {
	if !r.server.scriptsOnly.Load() {
		loads := r.server.loads.Load()
		cmd := r.fcall(ctx, s, keys, args)
		err := cmd.Err()
		switch {
		case functionMissing(err):
			err := r.load(ctx, loads)
			if err == nil {
				if cmd := r.fcall(ctx, s, keys, args); !functionMissing(cmd.Err()) {
					return cmd
				}
				// Flushed again since that load: this call runs as a script.
			} else if functionsRefused(err) {
				r.server.scriptsOnly.Store(true)
			}
			// Else the load failed for now (a server out of memory refuses it, a release
			// must not wait for that): this call runs as a script, the next tries again.
		case functionsRefused(err):
			r.server.scriptsOnly.Store(true)
		default:
			return cmd
		}
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.(string)
	}
	return s.Run(ctx, r.rdb, names, args...)
}

// fcall sends FCALL as go-redis's FCall would, without boxing the keys and the function's
// name again on every call.
func (r *scriptRunner) fcall(ctx context.Context, s *serverScript, keys, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, s.fcallHead...)
	cmdArgs = append(cmdArgs, len(keys))
	cmdArgs = append(cmdArgs, keys...)
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // fcall <function> <numkeys> <keys...>
	}
	_ = r.rdb.Process(ctx, cmd)
	return cmd
}

// load loads functionLibrary on the server, or on every master of a cluster, unless a load
// succeeded since the caller saw loads of them. A library that is there already (another
// client loaded it) is fine.
func (r *scriptRunner) load(ctx context.Context, loads uint64) error {
	select {
	case r.server.loading <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.server.loading }()
	if r.server.loads.Load() != loads {
		return nil
	}
	var err error
	if c, ok := r.rdb.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return loadLibrary(ctx, c) })
	} else {
		err = loadLibrary(ctx, r.rdb)
	}
	if err == nil {
		r.server.loads.Add(1)
	}
	return err
}

func loadLibrary(ctx context.Context, c scriptConn) error {
	if err := c.FunctionLoad(ctx, functionLibrary.source).Err(); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// functionMissing reports a FCALL refused because the server does not have the function.
func functionMissing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Function not found")
}

// functionsRefused reports a command refused because the server does not know it (Redis
// before 7.0) or the user's ACL does not permit the command itself ("NOPERM ... to run the
// 'fcall' command"; a NOPERM for the call's keys or channels is that call's error only).
func functionsRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "to run the '") ||
		strings.Contains(strings.ToLower(msg), "unknown command")
}
