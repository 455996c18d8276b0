-- Redlock, one instance: owner-checked release of one Lock (operation id op) on KEYS[1]; a
-- re-entrant lock loses its level and is deleted only with its last. A copy of this release
-- that runs again finds op in the ended set and reports the first one's success.
-- KEYS: lock, levels, ended operations
-- ARGV: value (a base, for a re-entrant lock), re-entrant '1'/'0', release channel ('' =
--       none), op, '1' to record op as ended ('0' for the undo of a plain attempt: its op
--       is the Obtain's, which goes on with its next attempt)
-- On delete "<key>\n<value>" is announced on the release channel, which every Redlock
-- client subscribes to on every instance: there is no wait queue to pick one waiter from.
-- Returns -1 when not held, -2 when a copy of this release ran already, 0 when deleted,
-- else the levels still held.
local key, levels, done = KEYS[1], KEYS[2], KEYS[3]
local value, reentrant, channel, op, record = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4], ARGV[5] == '1'
checkTypes(key, 'string', levels, 'set', done, 'zset')
if record and released(done, op) then
  return -2
end
-- A release that finds the lock gone still ends op: a copy of its acquire that reaches this
-- instance later must not take the key for nobody.
local function gone()
  if record then
    finish(done, op .. '!')
  end
  return -1
end
local cur = redis.call('GET', key)
if reentrant then
  if not holds(cur, value, levels, op) then
    return gone()
  end
  local n = redis.call('SCARD', levels) - 1
  if n > 0 then
    redis.call('SREM', levels, op)
    showCount(key, reentrantParts(cur), n)
    if record then
      finish(done, op)
    end
    return n
  end
  redis.call('DEL', levels)
elseif cur ~= value then
  return gone()
end
redis.call('DEL', key)
if record then
  finish(done, op)
end
if channel ~= '' then
  redis.call('PUBLISH', channel, key .. '\n' .. cur)
end
return 0
