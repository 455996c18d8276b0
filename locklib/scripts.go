package locklib

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Every locklib operation on the server is one Lua script that runs two ways:
//
//   - as a function of one Redis Functions library (FCALL; Redis 7.0 and later), which
//     defines the protocol's helpers (protocol.LuaLibrary) once, when it is loaded;
//   - as a script with that library prepended (EVALSHA, falling back to EVAL on NOSCRIPT),
//     which defines every helper again on each call, for servers without Functions or whose
//     ACL refuses them (scriptRunner, functions.go, decides which).
//
// The library's name and its functions' names carry a hash of its code, so clients of
// different locklib versions on one server each call their own code.
type serverScript struct {
	*redis.Script        // the EVALSHA form: protocol.LuaLibrary() + the script's own code
	function      string // the function's name in functionLibrary
	fcallHead     []any  // "fcall", function: boxed once (scriptRunner.fcall)
	body          string
	flags         string // the function's flags, as a Lua table
}

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

	// A function without the allow-oom flag is refused as a whole by a server out of memory
	// (noeviction), before it ran: so is a new acquisition, which must grow memory. A
	// release, a renewal and a clean-up are allowed, so that memory pressure never keeps a
	// lock held (as their script forms, whose growing writes fail alone and are best effort).
	scriptAcquire = newServerScript("acquire", luaAcquire, "{}")
	scriptRelease = newServerScript("release", luaRelease, "{'allow-oom'}")
	scriptRefresh = newServerScript("refresh", luaRefresh, "{'allow-oom'}")
	scriptPTTL    = newServerScript("pttl", luaPTTL, "{'no-writes'}")
	scriptLeave   = newServerScript("leave", luaLeave, "{'allow-oom'}")
)

// The scripts every lease-set kind shares (lease.go): a read or write level of a read-write
// lock and a semaphore's permit are released, renewed, timed and cleaned up after alike; each
// kind has an acquire script of its own.
var (
	//go:embed lease_release.lua
	luaLeaseRelease string
	//go:embed lease_refresh.lua
	luaLeaseRefresh string
	//go:embed lease_pttl.lua
	luaLeasePTTL string
	//go:embed lease_leave.lua
	luaLeaseLeave string

	// The lease semaphore's own scripts (semaphore.go); its permits are released, renewed and
	// cleaned up after by the lease set's.
	//go:embed semaphore_acquire.lua
	luaSemAcquire string
	//go:embed semaphore_resize.lua
	luaSemResize string
	//go:embed semaphore_status.lua
	luaSemStatus string
	//go:embed rw_acquire.lua
	luaRWAcquire string

	scriptLeaseRelease = newServerScript("lease_release", luaLeaseRelease, "{'allow-oom'}")
	scriptLeaseRefresh = newServerScript("lease_refresh", luaLeaseRefresh, "{'allow-oom'}")
	scriptLeasePTTL    = newServerScript("lease_pttl", luaLeasePTTL, "{'no-writes'}")
	scriptLeaseLeave   = newServerScript("lease_leave", luaLeaseLeave, "{'allow-oom'}")
	scriptSemAcquire   = newServerScript("sem_acquire", luaSemAcquire, "{}")
	// A resize writes the limit (a string that may grow): refused whole when out of memory.
	scriptSemResize = newServerScript("sem_resize", luaSemResize, "{}")
	scriptSemStatus = newServerScript("sem_status", luaSemStatus, "{'no-writes'}")
	scriptRWAcquire = newServerScript("rw_acquire", luaRWAcquire, "{}")
)

// A multi-key lock's scripts (multi.go) take several lock keys, each with its companions.
var (
	//go:embed multi_acquire.lua
	luaMultiAcquire string
	//go:embed multi_release.lua
	luaMultiRelease string
	//go:embed multi_refresh.lua
	luaMultiRefresh string
	//go:embed multi_pttl.lua
	luaMultiPTTL string
	//go:embed multi_leave.lua
	luaMultiLeave string

	scriptMultiAcquire = newServerScript("multi_acquire", luaMultiAcquire, "{}")
	scriptMultiRelease = newServerScript("multi_release", luaMultiRelease, "{'allow-oom'}")
	scriptMultiRefresh = newServerScript("multi_refresh", luaMultiRefresh, "{'allow-oom'}")
	scriptMultiPTTL    = newServerScript("multi_pttl", luaMultiPTTL, "{'no-writes'}")
	scriptMultiLeave   = newServerScript("multi_leave", luaMultiLeave, "{'allow-oom'}")
)

// Redlock runs refresh.lua and pttl.lua on each instance as they are, and two scripts of its
// own (with lib.lua's helpers): the single-instance acquire script also keeps a fencing counter and a FIFO wait
// queue, and its release wakes the queue's head, none of which means anything across N
// independent servers. A plain lock is taken with SET NX PX, no script at all. The stored
// value has the same format, so the inspector decodes a Redlock holder on every instance like
// any other lockscope lock. Redlock sends them as scripts only (EVALSHA), so they are plain
// scripts, with no function name or flags.
var (
	//go:embed redlock_reentrant.lua
	luaRedlockReentrant string
	//go:embed redlock_release.lua
	luaRedlockRelease string

	scriptRedlockReentrant = redis.NewScript(protocol.LuaLibrary() + luaRedlockReentrant)
	scriptRedlockRelease   = redis.NewScript(protocol.LuaLibrary() + luaRedlockRelease)
)

// serverScripts are the functions of functionLibrary, in the order it defines them. Redlock's
// own two scripts are not among them: Redlock sends them as scripts only (as functions they
// were no faster, docs/benchmarks/locklib.md).
var serverScripts = []*serverScript{scriptAcquire, scriptRelease, scriptRefresh, scriptPTTL, scriptLeave,
	scriptLeaseRelease, scriptLeaseRefresh, scriptLeasePTTL, scriptLeaseLeave, scriptSemAcquire, scriptSemResize, scriptSemStatus,
	scriptMultiAcquire, scriptMultiRelease, scriptMultiRefresh, scriptMultiPTTL, scriptMultiLeave,
	scriptRWAcquire}

// functionLibrary is the library of locklib's functions (FUNCTION LOAD), named
// lockscope_<hash of its code>.
var functionLibrary = newFunctionLibrary(serverScripts)

type library struct {
	name   string
	source string
}

func newServerScript(name, body, flags string) *serverScript {
	return &serverScript{Script: redis.NewScript(protocol.LuaLibrary() + body), function: name, body: body, flags: flags}
}

// newFunctionLibrary builds the library and names each script's function after it.
func newFunctionLibrary(scripts []*serverScript) library {
	hash := sha1.New()
	hash.Write([]byte(protocol.LuaLibrary()))
	for _, s := range scripts {
		hash.Write([]byte("\x00" + s.function + "\x00" + s.flags + "\x00" + s.body))
	}
	name := "lockscope_" + hex.EncodeToString(hash.Sum(nil)[:6])
	var code strings.Builder
	code.WriteString("#!lua name=" + name + "\n" + protocol.LuaLibrary())
	for _, s := range scripts {
		s.function = name + "_" + s.function
		s.fcallHead = []any{"fcall", s.function}
		code.WriteString("\nredis.register_function{function_name = '" + s.function + "', flags = " + s.flags +
			", callback = function(KEYS, ARGV)\n" + s.body + "\nend}\n")
	}
	return library{name: name, source: code.String()}
}
