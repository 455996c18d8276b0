-- Compare-and-PEXPIRE (holder.lua is prepended): sets the TTL of KEYS[1] to ARGV[2] ms only
-- when it still holds the expected value, and, unless ARGV[4+2n] (after the hash pairs) is
-- 'true', only when that does not shorten it: a key with more than ARGV[2] ms left, or without
-- expiry, is left as it is and its PTTL returned with 'longer' (checked here, atomically with
-- the write, so a race cannot shorten it either).
-- A re-entrant locklib lock's levels set (KEYS[2], protocol.LevelsKey) must live as long as
-- the key: it gets the same TTL. Its fencing counter (KEYS[3], protocol.FenceKey) must outlive
-- it, so that a re-entry reports the holder's token: it is extended to the TTL when it would
-- go sooner.
local status, current = holder(KEYS[1])
if status == 'match' then
  local left = redis.call('PTTL', KEYS[1])
  if ARGV[4 + 2 * tonumber(ARGV[3])] ~= 'true' and (left == -1 or left > tonumber(ARGV[2])) then
    return {'longer', tostring(left)}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if KEYS[2] and redis.call('TYPE', KEYS[2])['ok'] == 'set' then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
  if KEYS[3] and redis.call('TYPE', KEYS[3])['ok'] == 'string' then
    local fenceLeft = redis.call('PTTL', KEYS[3])
    if fenceLeft >= 0 and fenceLeft < tonumber(ARGV[2]) then
      redis.call('PEXPIRE', KEYS[3], ARGV[2])
    end
  end
end
return {status, current}
