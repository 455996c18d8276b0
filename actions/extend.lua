-- Compare-and-PEXPIRE (holder.lua is prepended): sets the TTL of KEYS[1] to ARGV[2] ms only
-- when it still holds the expected value.
local status, current = holder(KEYS[1])
if status == 'match' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {status, current}
