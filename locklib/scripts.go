package locklib

import (
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
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

	scriptAcquire = redis.NewScript(protocol.LuaLibrary + luaAcquire)
	scriptRelease = redis.NewScript(protocol.LuaLibrary + luaRelease)
	scriptRefresh = redis.NewScript(protocol.LuaLibrary + luaRefresh)
	scriptPTTL    = redis.NewScript(protocol.LuaLibrary + luaPTTL)
	scriptLeave   = redis.NewScript(protocol.LuaLibrary + luaLeave)
)
