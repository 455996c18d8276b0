-- Removes what a demo run left of one lease set (a read-write lock or a semaphore) on one
-- instance. KEYS[1] is the lease set; KEYS[2..] its companions (fence counter, wait queue and
-- presence, levels, ended set, limit); ARGV the lock values of this run's leases that may be
-- left in it (its crashed workers'). Expired members go first, as every script of the layout
-- removes them (they hold nothing, but another client's live lease keeps the set, and them in
-- it, alive), then members with one of those values; once no member is left, the companions go
-- too, so another client's lease keeps its fence, queue and limit. A key of another type is
-- left alone. Returns the number of members and keys deleted.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'zset' and kind ~= 'none' then
  return 0
end
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deleted = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
local mine = {}
for i = 1, #ARGV do
  mine[ARGV[i]] = true
end
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  -- member = mode "|" op "|" value (docs/value-format.md, "Lease sets")
  local value = string.match(member, '^[rwp]|[^|]*|(.*)$')
  if value and mine[value] then
    deleted = deleted + redis.call('ZREM', KEYS[1], member)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return deleted
end
return deleted + redis.call('DEL', unpack(KEYS, 2))
