-- Remaining time of one lease of lease set KEYS[1]: ms until its member's deadline, or -3
-- when the member holds nothing (gone, or expired). ARGV: member.
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not deadline then
  return -3
end
local left = tonumber(deadline) - nowMs()
if left <= 0 then
  return -3
end
return left
