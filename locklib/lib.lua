-- Shared helpers, prepended to every locklib script (scripts.go). Redis forbids globals in
-- scripts, so everything here is local.

local EVENTS = 'lockscope:events' -- locklib.EventsChannel
local WAKE = 'lockscope:wake:'    -- + client id: where a client's waiters are woken

-- owns reports whether the stored value cur belongs to the holder of v: the same value, or,
-- for a re-entrant lock whose v is the base, v followed by ':<count>'.
local function owns(cur, v)
  if not cur then
    return false
  end
  if cur == v then
    return true
  end
  local n = #v
  return string.sub(cur, 1, n + 1) == v .. ':' and string.match(string.sub(cur, n + 2), '^%d+$') ~= nil
end

-- nowMs is the server's clock in milliseconds.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t
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

-- Queue entries are '<waiter id>|<ttl ms>|<value>', waiter ids '<client id>:<n>': the
-- entry says whom to wake and, for a hand-off inside one client, what to write.
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

-- nextToken hands out the fencing token: above every token handed out before, even if the
-- counter was deleted, evicted or lost in a failover, because the server clock in
-- microseconds is a floor (docs/value-format.md).
local function nextToken(fence, fenceTTL)
  local t = redis.call('TIME')
  local clock = t[1] .. string.format('%06d', tonumber(t[2]))
  local last = redis.call('SET', fence, clock, 'PX', fenceTTL, 'GET')
  if last and string.match(last, '^%d+$') and tonumber(last) >= tonumber(clock) then
    -- Several acquisitions within one microsecond, or the clock stepped back: count on.
    redis.call('SET', fence, last, 'PX', fenceTTL)
    redis.call('INCR', fence)
    return redis.call('GET', fence)
  end
  return clock
end

-- A value's timestamp is stamped by the server when the key is written (stamp), so a lock's
-- age counts from when it was taken, not from when its Obtain began to wait; sameHolder
-- compares two values but for that field.
local RAND = string.rep('%x', 16)

local function splitStamp(v)
  local head, tail = string.match(v, '^(.*:)%d+(:' .. RAND .. ')$')
  if not head then
    head, tail = string.match(v, '^(.*:)%d+(:' .. RAND .. ':%d+)$')
  end
  return head, tail
end

local function stamp(v, now)
  local head, tail = splitStamp(v)
  if not head then
    return v
  end
  return head .. string.format('%.0f', now) .. tail
end

local function sameHolder(a, b)
  if a == b then
    return true
  end
  local ha, ta = splitStamp(a)
  local hb, tb = splitStamp(b)
  return ha ~= nil and ha == hb and ta == tb
end

-- dequeue removes a waiter's entry.
local function dequeue(queue, presence, entry)
  redis.call('ZREM', queue, entry)
  redis.call('ZREM', presence, entry)
end

-- event publishes a lifecycle event: prefix is a JSON object without its closing brace.
local function event(prefix, tail)
  if prefix ~= '' then
    redis.call('PUBLISH', EVENTS, prefix .. tail .. '}')
  end
end

