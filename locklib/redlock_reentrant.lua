-- Redlock, one instance: one attempt to take KEYS[1] for a re-entrant owner (plain locks use
-- SET NX PX directly). ARGV: value (ending in ':1'), ttl ms, the owner's Value.Rand.
-- A free key is taken with the value; the same owner (same rand) enters again: count + 1,
-- the stored value otherwise unchanged, the TTL never shortened. No fencing counter and no
-- wait queue: across independent instances neither would mean anything.
-- Returns {1, stored value} when taken, {0, holder PTTL ms (-1 = no expiry)} otherwise.
local key, value, ttl, rand = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('SET', key, value, 'NX', 'PX', ttl) then
  return {1, value}
end
local cur = redis.call('GET', key)
local base, r, n = string.match(cur, '^(.*:(%x+)):(%d+)$')
if r == rand then
  local v = base .. ':' .. (tonumber(n) + 1)
  redis.call('SET', key, v, 'KEEPTTL')
  if redis.call('PTTL', key) < tonumber(ttl) then
    redis.call('PEXPIRE', key, ttl)
  end
  return {1, v}
end
return {0, redis.call('PTTL', key)}
