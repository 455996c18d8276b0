-- Remaining time of one multi-key Lock: the shortest PTTL of its n lock keys, or -3 when any
-- of them does not hold its value. KEYS: per lock key, as lockKeys (6n keys). ARGV: value.
local n = #KEYS / 6
local shortest = nil
for i = 1, n do
  local key = KEYS[(i - 1) * 6 + 1]
  if redis.call('GET', key) ~= ARGV[1] then
    return -3
  end
  local pttl = redis.call('PTTL', key)
  shortest = math.min(shortest or pttl, pttl)
end
return shortest
