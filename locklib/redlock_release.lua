-- Redlock, one instance: owner-checked release of KEYS[1]; a re-entrant lock goes one level
-- down and is deleted only at the last level. Standalone (no lib.lua): it runs on every
-- instance for every release, and a short script is a cheaper one.
-- ARGV: value (the base for a re-entrant lock), re-entrant '1'/'0', release channel ('' = none)
-- On delete "<key>\n<value>" is announced on the release channel, which every Redlock
-- client subscribes to on every instance: there is no wait queue to pick one waiter from.
-- Returns -1 when not held with value, 0 when deleted, else the levels still held.
local key, value = KEYS[1], ARGV[1]
local cur = redis.call('GET', key)
if not cur then
  return -1
end
if ARGV[2] == '1' then
  local prefix = value .. ':'
  local n = string.sub(cur, 1, #prefix) == prefix and string.match(string.sub(cur, #prefix + 1), '^%d+$')
  if not n then
    return -1
  end
  n = tonumber(n)
  if n > 1 then
    redis.call('SET', key, prefix .. (n - 1), 'KEEPTTL')
    return n - 1
  end
elseif cur ~= value then
  return -1
end
redis.call('DEL', key)
if ARGV[3] ~= '' then
  redis.call('PUBLISH', ARGV[3], key .. '\n' .. cur)
end
return 0
