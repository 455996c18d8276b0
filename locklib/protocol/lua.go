package protocol

import _ "embed"

//go:embed lib.lua
var luaLib string

// LuaLibrary returns the server-side half of the protocol: Lua helpers that every lockscope
// script prepends to its own source (or that locklib's Redis Functions library defines once,
// at load), so the queue entries, the ended set, the fencing
// counter and the channels are read and written the same way by locklib's scripts and by
// the inspector's force-release. Its header defines the channel names from this package's
// constants. Redis forbids globals in scripts, so everything in it is local; lib.lua lists
// the helpers.
func LuaLibrary() string { return luaLibrary }

var luaLibrary = "local EVENTS = '" + EventsChannel + "'\n" +
	"local WAKE = '" + WakeChannelPrefix + "' -- + client id: where a client's waiters are woken\n" +
	"local REDLOCK_RELEASED = '" + RedlockReleasedChannel + "'\n" +
	luaLib
