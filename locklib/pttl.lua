-- Remaining time of KEYS[1] if held with ARGV[1] (base for re-entrant): PTTL (-1 = no
-- expiry), or -3 when not held with that value.
local key = KEYS[1]
if not owns(redis.call('GET', key), ARGV[1]) then
  return -3
end
return redis.call('PTTL', key)
