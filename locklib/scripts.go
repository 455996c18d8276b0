package locklib

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts run with EVALSHA and fall back to EVAL on NOSCRIPT (redis.Script), so they
// survive SCRIPT FLUSH and restarts. lib.lua's helpers are prepended to each one.
var (
	//go:embed lib.lua
	luaLib string
	//go:embed acquire.lua
	luaAcquire string
	//go:embed release.lua
	luaRelease string
	//go:embed refresh.lua
	luaRefresh string
	//go:embed pttl.lua
	luaPTTL string
	//go:embed leave.lua
	luaLeave string

	scriptAcquire = redis.NewScript(luaLib + luaAcquire)
	scriptRelease = redis.NewScript(luaLib + luaRelease)
	scriptRefresh = redis.NewScript(luaLib + luaRefresh)
	scriptPTTL    = redis.NewScript(luaLib + luaPTTL)
	scriptLeave   = redis.NewScript(luaLib + luaLeave)
)

// WakeChannelPrefix + a client id is the channel that client's waiters are woken on, with
// "<waiter id>\n<key>" (lib.lua). A tool that deletes a lock on its holder's behalf (the
// inspector's force-release) publishes there too, so the queue's head does not wait for its
// next poll.
const WakeChannelPrefix = "lockscope:wake:"
