-- Owner-checked extension of one lease of lease set KEYS[1] (its member) to at least ARGV[2]
-- ms from now; it never shortens it, so renewals that run in any order, or twice, leave the
-- latest deadline any of them asked for. The set's TTL follows its latest deadline, and the
-- fencing counter lives at least as long as the lease (keepCounter), so a re-entry or a
-- request run twice reports the holder's token. It always writes (PEXPIRE):
-- a WAIT after it (WithReplicas) counts this write.
-- KEYS: lease set, fence counter. ARGV: member, ttl ms, renewed event.
-- Returns the ms left until the lease's deadline, or -3 when the member holds nothing (gone,
-- or expired).
local key, fence, member, ttl = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
local now = nowMs()
local deadline = redis.call('ZSCORE', key, member)
if not deadline or tonumber(deadline) <= now then
  return -3
end
deadline = math.max(tonumber(deadline), now + ttl)
redis.call('ZADD', key, deadline, member)
pruneLeases(key, now)
leaseExpire(key, now)
local left = deadline - now
keepCounter(fence, left)
event(ARGV[3], ',"ttl_ms":' .. left)
return left
