package locklib

import (
	_ "embed"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// The scripts run with EVALSHA and fall back to EVAL on NOSCRIPT (redis.Script), so they
// survive SCRIPT FLUSH and restarts. The protocol's Lua library (protocol.LuaLibrary) is
// prepended to each one.
var (
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

	scriptAcquire = redis.NewScript(protocol.LuaLibrary() + luaAcquire)
	scriptRelease = redis.NewScript(protocol.LuaLibrary() + luaRelease)
	scriptRefresh = redis.NewScript(protocol.LuaLibrary() + luaRefresh)
	scriptPTTL    = redis.NewScript(protocol.LuaLibrary() + luaPTTL)
	scriptLeave   = redis.NewScript(protocol.LuaLibrary() + luaLeave)
)

// Redlock runs refresh.lua and pttl.lua on each instance as they are, and two scripts of its
// own (with lib.lua's helpers): the single-instance acquire script also keeps a fencing counter and a FIFO wait
// queue, and its release wakes the queue's head, none of which means anything across N
// independent servers. A plain lock is taken with SET NX PX, no script at all. The stored
// value has the same format, so the inspector decodes a Redlock holder on every instance like
// any other lockscope lock.
var (
	//go:embed redlock_reentrant.lua
	luaRedlockReentrant string
	//go:embed redlock_release.lua
	luaRedlockRelease string

	scriptRedlockReentrant = redis.NewScript(protocol.LuaLibrary() + luaRedlockReentrant)
	scriptRedlockRelease   = redis.NewScript(protocol.LuaLibrary() + luaRedlockRelease)
)
