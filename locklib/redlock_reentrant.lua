-- Redlock, one instance: one attempt of one Obtain (operation id op) to take KEYS[1] for a
-- re-entrant owner (plain locks use SET NX PX directly). A free key is taken with the value;
-- the same owner (same rand) enters again: count + 1, the stored value otherwise unchanged,
-- the TTL never shortened. No fencing counter and no wait queue: across independent
-- instances neither would mean anything. A copy of this request that runs again finds op in
-- the levels set and changes nothing; one that runs after op ended takes nothing.
-- KEYS: lock, levels, ended operations. ARGV: value (ending in ':1'), ttl ms, the owner's
-- Value.Rand, op.
-- Returns {1, stored value} when taken, {0, holder PTTL ms (-1 = no expiry)} otherwise.
local key, levels, done = KEYS[1], KEYS[2], KEYS[3]
local value, ttl, rand, op = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
checkTypes(key, 'string', levels, 'set', done, 'zset')
if ended(done, op) then
  return {0, redis.call('PTTL', key)}
end
local cur = redis.call('GET', key)
if not cur then
  redis.call('SET', key, value, 'PX', ttl)
  redis.call('DEL', levels)
  redis.call('SADD', levels, op)
  redis.call('PEXPIRE', levels, ttl)
  return {1, value}
end
local base, r = reentrantParts(cur)
if r == rand and redis.call('EXISTS', levels) == 1 then
  if redis.call('SADD', levels, op) == 1 then
    local n = redis.call('SCARD', levels)
    showCount(key, base, n)
    cur = base .. ':' .. n
    extendTo(key, levels, nil, ttl)
  end
  return {1, cur}
end
return {0, redis.call('PTTL', key)}
