-- Compare-and-PEXPIRE (holder.lua is prepended): sets the TTL of KEYS[1] to ARGV[2] ms only
-- when it still holds the expected value. A re-entrant locklib lock's levels set (KEYS[2],
-- protocol.LevelsKey) must live as long as the key: it gets the same TTL.
local status, current = holder(KEYS[1])
if status == 'match' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if KEYS[2] and redis.call('TYPE', KEYS[2])['ok'] == 'set' then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
end
return {status, current}
