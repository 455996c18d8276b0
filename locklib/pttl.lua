-- Remaining time of one Lock on KEYS[1]: PTTL (-1 = no expiry), or -3 when the Lock does not
-- hold the key. KEYS: lock, levels. ARGV: value (base for a re-entrant lock), op ('' for a
-- plain lock: its level in the levels set otherwise).
local key = KEYS[1]
if not holds(redis.call('GET', key), ARGV[1], KEYS[2], ARGV[2]) then
  return -3
end
return redis.call('PTTL', key)
