-- Owner-checked extension of KEYS[1] to ARGV[2] ms. ARGV: value (base for re-entrant),
-- ttl ms, renewed event. Returns the new PTTL, or -3 when the lock is not held with value.
local key = KEYS[1]
if not owns(redis.call('GET', key), ARGV[1]) then
  return -3
end
redis.call('PEXPIRE', key, ARGV[2])
local pttl = redis.call('PTTL', key)
event(ARGV[3], ',"ttl_ms":' .. pttl)
return pttl
