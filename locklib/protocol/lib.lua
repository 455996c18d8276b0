-- The protocol's Lua library (LuaLibrary, lua.go), prepended to every locklib script and to
-- the inspector's force-release (actions/release.lua), or at the head of locklib's Redis
-- Functions library (locklib/scripts.go), where it runs once, at load: so its top level
-- calls no library function (Redis 7.0 offers none while loading). Redis forbids globals in
-- scripts, so everything here is local. The header that lua.go puts before it defines the channels:
-- EVENTS (EventsChannel), WAKE (WakeChannelPrefix), REDLOCK_RELEASED (RedlockReleasedChannel).
--
-- Every script is safe to run twice: go-redis sends a request again when the connection
-- broke before the reply came, and the server may have run the first copy. Each request
-- carries its Obtain's operation id, and a script recognizes its own earlier effect (our
-- value already in the key, our level already in the levels set, our release already in the
-- ended set) instead of applying it again (docs/locklib.md, "Requests that run twice").
-- Every script also reads each key it may write before its first write (or checks its type,
-- checkTypes, or reads it with that first write: swapToken): a key of the wrong type fails
-- the script before it changed anything, so a
-- script that fails leaves nothing half done. A server out of memory (noeviction) refuses
-- the writes that may grow memory (SET, SADD, ZADD, LPUSH...) but not DEL, SREM or ZREM: a
-- script makes its one growing write before its other changes, or makes it best effort
-- (finish, showCount), so that under memory pressure a release still releases. (As Redis
-- Functions, the release, refresh and leave carry allow-oom, which lets those writes through;
-- the acquire does not, so a server out of memory refuses it whole.)

-- The ended set (EndedKey) remembers the last ENDED_MAX operations that ended on a
-- key (score: the server's unix ms when it ended), and goes ENDED_MS after the last of them:
-- a late copy of a request of one of them changes nothing.
local ENDED_MAX = 1024
local ENDED_MS = 10000

-- checkTypes fails the script, before it wrote anything, when a key of pairs (key, expected
-- type) exists with another type.
local function checkTypes(...)
  local kv = {...}
  for i = 1, #kv, 2 do
    local kind = redis.call('TYPE', kv[i])['ok']
    if kind ~= 'none' and kind ~= kv[i + 1] then
      error(redis.error_reply('WRONGTYPE locklib: ' .. kv[i] .. ' is a ' .. kind .. ', not a ' .. kv[i + 1]))
    end
  end
end

-- clock reads the server's clock once: its unix microseconds and milliseconds as decimal
-- text (the form they are written in: a token, a value's timestamp).
local function clock()
  local t = redis.call('TIME')
  local us = string.format('%s%06d', t[1], t[2])
  return us, string.sub(us, 1, -4)
end

-- nowMs is the server's clock in milliseconds, as a number; clock's reading when given.
local function nowMs(us)
  if not us then
    us = clock()
  end
  return tonumber(string.sub(us, 1, -4))
end

-- The ended set holds op when op's release succeeded, op .. '!' when op ended otherwise
-- (its Obtain gave up, or its release found the lock gone).

-- released reports whether operation op's release succeeded lately.
local function released(done, op)
  return redis.call('ZSCORE', done, op) ~= false
end

-- ended reports whether operation op ended lately, however: in one ZMSCORE where the server
-- has it (6.2; REDIS_VERSION_NUM, set from 7.0, tells), in two ZSCOREs elsewhere.
local function ended(done, op)
  if redis.REDIS_VERSION_NUM then
    local scores = redis.call('ZMSCORE', done, op, op .. '!')
    return scores[1] ~= false or scores[2] ~= false
  end
  return released(done, op) or redis.call('ZSCORE', done, op .. '!') ~= false
end

-- finish records that an operation ended (entry: op or op .. '!'), at ms (the server's
-- clock in ms: read now when not given). Best effort: the caller's
-- own change is made first, and a server out of memory refuses this write (it grows a set)
-- without undoing that change. A new entry drops the oldest beyond ENDED_MAX (none while
-- the set is smaller: one command either way, where counting first took two at the cap).
local function recordEnded(done, entry, ms)
  if redis.call('ZADD', done, ms, entry) == 1 then
    redis.call('ZREMRANGEBYRANK', done, 0, -ENDED_MAX - 1)
  end
  redis.call('PEXPIRE', done, ENDED_MS)
end

local function finish(done, entry, ms)
  pcall(recordEnded, done, entry, ms or nowMs())
end

-- keepCounter makes fence counter fence (when it exists) live at least ms more: the counter
-- outlives every lease and lock on its key, so that a re-entry, a request run twice, or a
-- reader let in after a downgrade reads the holder's token, and tokens stay above it when
-- the server's clock steps back while the key is held.
local function keepCounter(fence, ms)
  local left = redis.call('PTTL', fence)
  if left >= 0 and left < ms then
    redis.call('PEXPIRE', fence, ms)
  end
end

-- extendTo makes key (and its levels set and fence counter, when given) live at least ttl ms
-- more; it never shortens them: another Lock on the same key (a re-entrant level, or a
-- renewal that ran first but answered last) may rely on the longer expiry. The counter
-- outlives the lock, so that a re-entry or a request run twice reports the holder's token
-- (currentToken). Returns the PTTL now (-1: none).
local function extendTo(key, levels, fence, ttl)
  local pttl = redis.call('PTTL', key)
  if pttl >= 0 and pttl < ttl then
    redis.call('PEXPIRE', key, ttl)
    if levels then
      redis.call('PEXPIRE', levels, ttl)
    end
    if fence then
      keepCounter(fence, ttl)
    end
    return ttl
  end
  return pttl
end

-- reentrantParts returns the base and the owner's rand of a re-entrant value (nil otherwise).
local function reentrantParts(cur)
  local base, rand = string.match(cur, '^(.*:(%x+)):%d+$')
  return base, rand
end

-- showCount writes a re-entrant lock's count of levels into its value, for readers (the
-- inspector). The scripts go by the levels set, so this is best effort: a server out of
-- memory refuses it (SET may grow memory), and the count shown lags until the next change.
local function showCount(key, base, n)
  pcall(redis.call, 'SET', key, base .. ':' .. n, 'KEEPTTL')
end

-- holds reports whether one Lock holds the key whose stored value is cur: a plain Lock when
-- cur is its value; a re-entrant level (op ~= '') when cur is its owner's (the same rand as
-- the Lock's base: the base's timestamp is its first entry's, which an instance that missed
-- that entry does not have) and op is in the levels set.
local function holds(cur, value, levels, op)
  if not cur then
    return false
  end
  if op == '' then
    return cur == value
  end
  local _, rand = reentrantParts(cur)
  return rand ~= nil and rand == string.match(value, ':(%x+)$') and redis.call('SISMEMBER', levels, op) == 1
end

-- prune drops waiters whose presence deadline has passed and returns the queue length.
local function prune(queue, presence, now)
  local stale = redis.call('ZRANGEBYSCORE', presence, '-inf', now)
  for i = 1, #stale do
    redis.call('ZREM', queue, stale[i])
    redis.call('ZREM', presence, stale[i])
  end
  return redis.call('ZCARD', queue)
end

-- liveHead is the first waiter in arrival order that still has a presence entry; queue
-- entries whose presence entry vanished are dropped on the way.
local function liveHead(queue, presence)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return nil
    end
    if redis.call('ZSCORE', presence, head) then
      return head
    end
    redis.call('ZREM', queue, head)
  end
end

-- Queue entries are '<waiter id>|<ttl ms>|<value>', waiter ids '<client id>:<n>' (QueueEntry):
-- the entry says whom to wake and, for a hand-off inside one client, what to write.
local function entryParts(entry)
  return string.match(entry, '^(([^:|]+):[^|]*)|(%d+)|(.*)$')
end

-- plain reports whether a locklib value is a plain lock's (4 fields; a re-entrant lock's
-- has a 5th, its count). Only plain locks are handed over: a re-entrant waiter's value can
-- equal its owner's value from another Obtain in the same millisecond.
local function plain(value)
  local _, colons = string.gsub(value, ':', '')
  return colons == 3
end

-- wake tells the waiter's client that key may be taken.
local function wake(entry, key)
  local id, client = entryParts(entry)
  if client then
    redis.call('PUBLISH', WAKE .. client, id .. '\n' .. key)
  end
end

-- wakeLiveHead wakes the first live waiter of key for a script that deleted the lock on its
-- holder's behalf (the inspector's force-release). It only reads the queue, as a release
-- by an operator whose ACL may not change locklib's queues must still wake: it looks at the
-- first WAKE_SCAN entries, and a waiter is live while its presence deadline has not passed
-- (deadline >= now). Stale entries stay for locklib's next acquire or release to prune.
local WAKE_SCAN = 16

local function wakeLiveHead(key, queue, presence)
  local now = nowMs()
  for _, entry in ipairs(redis.call('ZRANGE', queue, 0, WAKE_SCAN - 1)) do
    local deadline = redis.call('ZSCORE', presence, entry)
    if deadline and tonumber(deadline) >= now then
      wake(entry, key)
      return
    end
  end
end

-- nextToken hands out the fencing token (last: the counter as the caller read it; us: the
-- caller's clock reading, if it has one): the server clock in microseconds, or the counter
-- + 1 when that is not above the counter. The clock is the floor that keeps tokens
-- increasing once the counter has gone (it lives fenceTTL ms after each acquisition); the
-- counter covers what the clock alone does not: a clock that stepped back, and several
-- acquisitions within one microsecond (docs/value-format.md, "Fencing tokens").
local function nextToken(fence, fenceTTL, last, us)
  us = us or clock()
  -- A counter of over 18 digits is not ours (INCR could overflow): the clock replaces it.
  if last and string.match(last, '^%d+$') and #last <= 18 and tonumber(last) >= tonumber(us) then
    redis.call('INCR', fence)
    redis.call('PEXPIRE', fence, fenceTTL)
    return redis.call('GET', fence)
  end
  redis.call('SET', fence, us, 'PX', fenceTTL)
  return us
end

-- swapToken is nextToken for a caller that has not read the counter and writes nothing
-- before it: the clock's token is written and the counter read in one command (SET ... GET,
-- Redis 6.2; a counter of another type fails it before it wrote), and when the counter was
-- at or above the clock it is put back and moved on as nextToken does.
local function swapToken(fence, fenceTTL, us)
  if not redis.REDIS_VERSION_NUM then
    return nextToken(fence, fenceTTL, redis.call('GET', fence), us)
  end
  local last = redis.call('SET', fence, us, 'PX', fenceTTL, 'GET')
  if last and string.match(last, '^%d+$') and #last <= 18 and tonumber(last) >= tonumber(us) then
    redis.call('SET', fence, last, 'PX', fenceTTL)
    return nextToken(fence, fenceTTL, last, us)
  end
  return us
end

-- currentToken is the token of the acquisition that holds the key now: the counter (last,
-- as read), which only an acquisition moves. A counter deleted meanwhile is replaced by a
-- new token.
local function currentToken(fence, fenceTTL, last)
  if last and string.match(last, '^%d+$') and #last <= 18 then
    return last
  end
  return nextToken(fence, fenceTTL, last)
end

-- A value's timestamp is stamped by the server when the key is written (stamp), so a lock's
-- age counts from when it was taken, not from when its Obtain began to wait; sameHolder
-- compares two values but for that field.
-- '<fields>:<unix_ms>:<rand: 16 hex digits>' and the same with ':<count>' after, spelled out:
-- prepended to a script, any expression here runs on every call.
local STAMPED = '^(.*:)%d+(:%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x)$'
local STAMPED_REENTRANT = '^(.*:)%d+(:%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x%x:%d+)$'

local function splitStamp(v)
  local head, tail = string.match(v, STAMPED)
  if not head then
    head, tail = string.match(v, STAMPED_REENTRANT)
  end
  return head, tail
end

local function stamp(v, ms)
  local head, tail = splitStamp(v)
  if not head then
    return v
  end
  return head .. ms .. tail
end

local function sameHolder(a, b)
  if a == b then
    return true
  end
  local ha, ta = splitStamp(a)
  local hb, tb = splitStamp(b)
  return ha ~= nil and ha == hb and ta == tb
end

-- unescapeField decodes a value field's %XX escapes.
local function hexChar(h)
  return string.char(tonumber(h, 16))
end

local function unescapeField(f)
  return (string.gsub(f, '%%(%x%x)', hexChar))
end

-- handedOver publishes the acquired event of lock key handed by a release to a waiter (whose
-- JSON the releasing client could not prepare): node and trace are decoded from its value v.
local function handedOver(key, v, ttl, token, waiters, ms)
  local node, trace = string.match(v, '^([^:]*):([^:]*):')
  local e = '{"type":"acquired","key":' .. cjson.encode(key) .. ',"value":' .. cjson.encode(v) ..
    ',"node":' .. cjson.encode(unescapeField(node))
  if trace ~= '-' then
    e = e .. ',"trace":' .. cjson.encode(unescapeField(trace))
  end
  e = e .. ',"token":' .. token .. ',"ttl_ms":' .. ttl .. ',"waiters":' .. waiters .. ',"at_ms":' .. ms .. '}'
  redis.call('PUBLISH', EVENTS, e)
end

-- dequeue removes a waiter's entry.
local function dequeue(queue, presence, entry)
  redis.call('ZREM', presence, entry) -- first: the caller may not have read presence yet
  redis.call('ZREM', queue, entry)
end

-- event publishes a lifecycle event: prefix is a JSON object without its closing brace, tail
-- the fields the script adds ('' publishes nothing: events are off).
local function event(prefix, tail)
  if prefix ~= '' then
    redis.call('PUBLISH', EVENTS, prefix .. tail .. '}')
  end
end

-- digits is a count as JSON: Lua turns a number into text with sprintf, which costs more
-- than the rest of a short script, and most counts are 0.
local function digits(n)
  if n == 0 then
    return '0'
  end
  return tostring(n)
end


-- Lease sets (docs/value-format.md, "Lease sets"): a read-write lock or a lease semaphore is
-- a sorted set at its key, one member '<mode>|<op>|<value>' per lease (a read or write level,
-- a permit), scored by the lease's deadline in the server's unix ms. A member whose deadline
-- is at or before now holds nothing.

-- leaseParts splits a lease member: its mode ('r', 'w' or 'p'), its operation id, its value.
local function leaseParts(member)
  return string.match(member, '^([rwp])|([^|]+)|(.*)$')
end

-- leaseKind fails the script, before it wrote anything, when lease set key holds leases of
-- another kind than modes ('rw': a read-write lock's levels, 'p': a semaphore's permits), as
-- WRONGTYPE does between a lock and a lease set: both kinds are sorted sets, and neither
-- would see the other's members as what they are (a permit granted beside a writer, a reader
-- beside permits). A set holds one kind, so its first member tells.
local function leaseKind(key, modes)
  local first = redis.call('ZRANGE', key, 0, 0)[1]
  local mode = first and leaseParts(first)
  if mode and not string.find(modes, mode, 1, true) then
    local kinds = {r = 'a read-write lock', w = 'a read-write lock', p = 'a semaphore'}
    error(redis.error_reply('WRONGTYPE locklib: ' .. key .. ' is ' .. kinds[mode] .. ', not ' .. kinds[string.sub(modes, 1, 1)]))
  end
end

-- leaseOwner is the owner of a lease member: its value's rand (a re-entrant owner's is the
-- same in all its members, any other is random per operation).
local function leaseOwner(member)
  return string.match(member, ':(%x+)$')
end

-- pruneLeases drops the members of lease set key whose deadline is at or before now (ms).
local function pruneLeases(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
end

-- leaseExpire makes lease set key live exactly until its latest deadline (PEXPIRE), so that
-- a set whose holders all crashed goes at the last deadline, like a lock. Call it after
-- pruneLeases: a set without members does not exist (Redis deletes an empty sorted set), and
-- one whose last deadline has passed is deleted here. It always writes when the set exists
-- (a WAIT after it counts it). Returns the ms left until that deadline, 0 when gone.
local function leaseExpire(key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if not last then
    return 0
  end
  local left = tonumber(last) - now
  if left <= 0 then
    redis.call('DEL', key)
    return 0
  end
  redis.call('PEXPIRE', key, left)
  return left
end

-- leaseOf is operation op's member of lease set key and its deadline (nil when op holds
-- none). It scans the set, which holds one member per holder level.
local function leaseOf(key, op)
  local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local _, o = leaseParts(all[i])
    if o == op then
      return all[i], tonumber(all[i + 1])
    end
  end
  return nil
end

-- leaseScan reads lease set key's live members (deadline after now), in deadline order:
-- each {member, mode, op, owner, deadline}. owners counts the distinct owners per mode
-- (owners.r, owners.w, owners.p); expired is how many members have expired.
local function leaseScan(key, now)
  local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local live, owners, seen, expired = {}, {r = 0, w = 0, p = 0}, {}, 0
  for i = 1, #all, 2 do
    local deadline = tonumber(all[i + 1])
    local mode, op = leaseParts(all[i])
    if deadline <= now then
      expired = expired + 1
    elseif mode then
      local owner = leaseOwner(all[i])
      live[#live + 1] = {member = all[i], mode = mode, op = op, owner = owner, deadline = deadline}
      local id = mode .. (owner or op)
      if not seen[id] then
        seen[id] = true
        owners[mode] = owners[mode] + 1
      end
    end
  end
  return live, owners, expired
end

-- A lease set's queue entries carry the mode in front of the value:
-- '<waiter id>|<ttl ms>|<mode>|<value>'. entryMode reads it (nil for a lock's entry).
local function entryMode(entry)
  return string.match(entry, '^[^|]*|%d+|([rwp])|')
end

-- permitLimit reads a lease semaphore's limit key (its text, or false when absent): a count
-- of at least 1 in decimal digits, as Resize and the first Acquire write it, or nil for
-- anything else. tonumber alone would take "2.5" (a third permit while two are out leaves
-- 0.5 free), "inf" (no limit at all), "0x2" or " 2".
local function permitLimit(text)
  if text and string.match(text, '^[1-9]%d*$') and #text <= 19 then
    return tonumber(text)
  end
  return nil
end

-- WAKE_RUN bounds how many waiters one change of a lease set wakes at once.
local WAKE_RUN = 64

-- wakeLeaseWaiters wakes the live waiters of lease set key that its change may admit, in
-- queue order from the head: a writer alone (when the set is empty), the run of readers at
-- the head (up to the first writer: all of them may hold together), or up to free permit
-- waiters (free: permits not out; nil wakes the head only).
local function wakeLeaseWaiters(key, queue, presence, free)
  local head = liveHead(queue, presence)
  if not head then
    return
  end
  local mode = entryMode(head)
  if mode ~= 'r' and mode ~= 'p' then
    if redis.call('EXISTS', key) == 0 then
      wake(head, key)
    end
    return
  end
  local budget = WAKE_RUN
  if mode == 'p' then
    budget = math.min(free or 1, WAKE_RUN)
  end
  for _, entry in ipairs(redis.call('ZRANGE', queue, 0, WAKE_RUN - 1)) do
    if budget <= 0 or entryMode(entry) ~= mode then
      return
    end
    if redis.call('ZSCORE', presence, entry) then
      wake(entry, key)
      budget = budget - 1
    end
  end
end

-- enqueue puts a waiter's entry at the back of queue unless it is queued already (its ticket
-- is now, or one above the tail's, so arrival order holds within a millisecond), refreshes its
-- presence deadline (now + window: written first, as presence may not have been read), keeps
-- both keys 2 x window, and publishes the waiting event when it was added (waitingEvent as
-- event's prefix). waiters is the queue's length before; returns it after.
local function enqueue(queue, presence, entry, now, window, waiters, waitingEvent)
  redis.call('ZADD', presence, now + window, entry)
  local added = false
  if not redis.call('ZSCORE', queue, entry) then
    local ticket = now
    local tail = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')
    if tail[2] and tonumber(tail[2]) >= ticket then
      ticket = tonumber(tail[2]) + 1
    end
    redis.call('ZADD', queue, ticket, entry)
    waiters = waiters + 1
    added = true
  end
  redis.call('PEXPIRE', queue, window * 2)
  redis.call('PEXPIRE', presence, window * 2)
  if added then
    event(waitingEvent, ',"waiters":' .. digits(waiters))
  end
  return waiters
end
