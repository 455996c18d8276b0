-- Redlock, one instance: owner-checked release of one Lock (operation id op) on KEYS[1]; a
-- re-entrant lock loses its level and is deleted only with its last. A copy of this release
-- that runs again finds op in the ended list and reports the first one's success.
-- KEYS: lock, levels, ended operations
-- ARGV: value (a base, for a re-entrant lock), re-entrant '1'/'0', release channel ('' =
--       none), op, '1' to record op as ended ('0' for the undo of one attempt: the Obtain
--       goes on with its next attempt)
-- On delete "<key>\n<value>" is announced on the release channel, which every Redlock
-- client subscribes to on every instance: there is no wait queue to pick one waiter from.
-- Returns -1 when not held, -2 when a copy of this release ran already, 0 when deleted,
-- else the levels still held.
local key, levels, done = KEYS[1], KEYS[2], KEYS[3]
local value, reentrant, channel, op, record = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4], ARGV[5] == '1'
checkTypes(key, 'string', levels, 'set', done, 'list')
if record and ended(done, op) then
  return -2
end
local cur = redis.call('GET', key)
if reentrant then
  if not holds(cur, value, levels, op) then
    return -1
  end
  redis.call('SREM', levels, op)
  local n = redis.call('SCARD', levels)
  if n > 0 then
    if record then
      finish(done, op)
    end
    redis.call('SET', key, reentrantParts(cur) .. ':' .. n, 'KEEPTTL')
    return n
  end
  redis.call('DEL', levels)
elseif cur ~= value then
  return -1
end
if record then
  finish(done, op)
end
redis.call('DEL', key)
if channel ~= '' then
  redis.call('PUBLISH', channel, key .. '\n' .. cur)
end
return 0
