-- Owner-checked release of one Lock (operation id op) on KEYS[1]; a re-entrant lock loses one
-- level and is deleted only with its last. On delete, the first live waiter gets the lock: a
-- waiter of the releasing client directly (the lock is written for it here, and the client
-- tells it), any other waiter by a wake-up message.
-- KEYS: lock, fence counter, wait queue, presence, levels, ended operations
-- ARGV: value (the base for a re-entrant lock), op, re-entrant '1'/'0', released event,
--       the releasing client's id, its fence retention ms (for a hand-off: the counter
--       lives max(ttl, retention), as acquire.lua's fence counter lifetime)
-- Returns {-1 not held | 0 one level down | 1 deleted | 2 a copy of this release ran already,
--          levels left, waiters, entry handed to ('' if none), its token, the value written for it}.
local key, fence, queue, presence, levels, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local value, op, reentrant, releasedEvent, self = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5]
local retention = tonumber(ARGV[6])

-- Reads before any write (protocol/lib.lua): lock, levels (holds), and ended when it is not
-- held; queue (and, when there are waiters, presence and fence, which a hand-off writes)
-- before a change. A Lock that still holds the key was not released by an earlier copy of
-- this request (that deleted its value or level, which nothing gives back: acquire.lua takes
-- nothing for an ended operation), so only a release that finds it gone asks the ended set.
local cur = redis.call('GET', key)
local held
if reentrant then
  held = holds(cur, value, levels, op)
else
  held = cur ~= false and cur == value
end
if not held then
  if released(done, op) then
    return {2, redis.call('SCARD', levels), redis.call('ZCARD', queue), '', '0', ''}
  end
  finish(done, op .. '!')
  return {-1, 0, 0, '', '0', ''}
end
local waiters = redis.call('ZCARD', queue)
local last = nil
if waiters > 0 then
  redis.call('ZCARD', presence)
  last = redis.call('GET', fence)
end
local us, ms = clock()
if reentrant then
  local n = redis.call('SCARD', levels) - 1
  if n > 0 then
    redis.call('SREM', levels, op)
    showCount(key, reentrantParts(cur), n)
    finish(done, op, ms)
    event(releasedEvent, ',"waiters":' .. digits(waiters))
    return {0, n, waiters, '', '0', ''}
  end
  redis.call('DEL', levels)
end
redis.call('DEL', key)
finish(done, op, ms)

local handedTo, token, written = '', '0', ''
if waiters > 0 then
  waiters = prune(queue, presence, tonumber(ms))
  local head = liveHead(queue, presence)
  if head then
    local _, client, ttl, nextValue = entryParts(head)
    -- The hand-off grows memory: a server out of memory refuses it, and the waiter is
    -- woken instead (the release itself is done).
    if client == self and plain(nextValue) and pcall(function()
      token = nextToken(fence, math.max(tonumber(ttl), retention), last, us)
      nextValue = stamp(nextValue, ms)
      redis.call('SET', key, nextValue, 'PX', ttl)
    end) then
      written = nextValue
      dequeue(queue, presence, head)
      waiters = waiters - 1
      handedTo = head
      if releasedEvent ~= '' then
        handedOver(key, nextValue, ttl, token, waiters, ms)
      end
    else
      wake(head, key)
    end
  end
end
event(releasedEvent, ',"waiters":' .. digits(waiters))
return {1, 0, waiters, handedTo, token, written}
