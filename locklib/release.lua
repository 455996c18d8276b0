-- Owner-checked release of one Lock (operation id op) on KEYS[1]; a re-entrant lock loses one
-- level and is deleted only with its last. On delete, the first live waiter gets the lock: a
-- waiter of the releasing client directly (the lock is written for it here, and the client
-- tells it), any other waiter by a wake-up message.
-- KEYS: lock, fence counter, wait queue, presence, levels, ended operations
-- ARGV: value (the base for a re-entrant lock), op, re-entrant '1'/'0', released event,
--       the releasing client's id
-- Returns {-1 not held | 0 one level down | 1 deleted | 2 a copy of this release ran already,
--          levels left, waiters, entry handed to ('' if none), its token, the value written for it}.
local key, fence, queue, presence, levels, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local value, op, reentrant, releasedEvent, self = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5]

-- handedOver publishes the acquired event of a lock handed to a waiter (whose JSON the
-- releasing client could not prepare): node and trace are decoded from the value.
local function handedOver(v, ttl, token, waiters)
  if releasedEvent == '' then
    return
  end
  local function unescape(f)
    return (string.gsub(f, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
  end
  local node, trace = string.match(v, '^([^:]*):([^:]*):')
  local t = redis.call('TIME')
  local e = '{"type":"acquired","key":' .. cjson.encode(key) .. ',"value":' .. cjson.encode(v) ..
    ',"node":' .. cjson.encode(unescape(node))
  if trace ~= '-' then
    e = e .. ',"trace":' .. cjson.encode(unescape(trace))
  end
  e = e .. ',"token":' .. token .. ',"ttl_ms":' .. ttl .. ',"waiters":' .. waiters ..
    ',"at_ms":' .. t[1] .. string.sub(string.format('%06d', tonumber(t[2])), 1, 3) .. '}'
  redis.call('PUBLISH', EVENTS, e)
end

-- Reads before any write (protocol/lib.lua): ended, lock, queue (and, when there are waiters,
-- presence and fence, which a hand-off writes); levels are read (holds) before a change.
if released(done, op) then
  return {2, redis.call('SCARD', levels), redis.call('ZCARD', queue), '', '0', ''}
end
local cur = redis.call('GET', key)
local waiters = redis.call('ZCARD', queue)
local last = nil
if waiters > 0 then
  redis.call('ZCARD', presence)
  last = redis.call('GET', fence)
end
if reentrant then
  if not holds(cur, value, levels, op) then
    finish(done, op .. '!')
    return {-1, 0, 0, '', '0', ''}
  end
  local n = redis.call('SCARD', levels) - 1
  if n > 0 then
    redis.call('SREM', levels, op)
    showCount(key, reentrantParts(cur), n)
    finish(done, op)
    event(releasedEvent, ',"waiters":' .. waiters)
    return {0, n, waiters, '', '0', ''}
  end
  redis.call('DEL', levels)
elseif cur ~= value then
  finish(done, op .. '!')
  return {-1, 0, 0, '', '0', ''}
end
redis.call('DEL', key)
finish(done, op)

local handedTo, token, written = '', '0', ''
if waiters > 0 then
  local now, time = nowMs()
  waiters = prune(queue, presence, now)
  local head = liveHead(queue, presence)
  if head then
    local _, client, ttl, nextValue = entryParts(head)
    -- The hand-off grows memory: a server out of memory refuses it, and the waiter is
    -- woken instead (the release itself is done).
    if client == self and plain(nextValue) and pcall(function()
      -- the counter's lifetime as acquire.lua sets it: max(10 * ttl, 24h)
      token = nextToken(fence, math.max(10 * tonumber(ttl), 86400000), last, time)
      nextValue = stamp(nextValue, now)
      redis.call('SET', key, nextValue, 'PX', ttl)
    end) then
      written = nextValue
      dequeue(queue, presence, head)
      waiters = waiters - 1
      handedTo = head
      handedOver(nextValue, ttl, token, waiters)
    else
      wake(head, key)
    end
  end
end
event(releasedEvent, ',"waiters":' .. waiters)
return {1, 0, waiters, handedTo, token, written}
