-- Owner-checked extension of one multi-key Lock on n lock keys (and their fence counters) to
-- at least ARGV[2] ms each: all of them, or none when any key does not hold the value any
-- more (the Lock is lost). It never shortens a key (protocol/lib.lua, extendTo).
-- KEYS: per lock key, as lockKeys (lock, fence counter, ...: 6n keys)
-- ARGV: value, ttl ms, '1' to write every key even when nothing is extended (WithReplicas,
--       as refresh.lua) else '0', then per key its renewed event ('' = none)
-- Returns the shortest PTTL now, or -3 when a key does not hold the value.
local n = #KEYS / 6
local value, ttl = ARGV[1], tonumber(ARGV[2])
for i = 1, n do
  if redis.call('GET', KEYS[(i - 1) * 6 + 1]) ~= value then
    return -3
  end
end
local shortest = nil
for i = 1, n do
  local b = (i - 1) * 6
  local pttl = extendTo(KEYS[b + 1], nil, KEYS[b + 2], ttl)
  if ARGV[3] == '1' and pttl > 0 then
    redis.call('SET', KEYS[b + 1], value, 'KEEPTTL')
  end
  event(ARGV[3 + i], ',"ttl_ms":' .. pttl)
  shortest = math.min(shortest or pttl, pttl)
end
return shortest
