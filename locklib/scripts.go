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

// wakeChannelPrefix + client id is the channel a client's waiters are woken on (lib.lua).
const wakeChannelPrefix = "lockscope:wake:"
