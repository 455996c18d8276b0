-- Semaphore.Resize: sets the limit of the lease semaphore at KEYS[1]. Permits out beyond a
-- smaller limit are not taken back (none is granted until fewer than the limit are out); a
-- larger one wakes the waiters that the new permits go to.
-- KEYS: lease set, wait queue, presence, limit. ARGV: the new limit.
local key, queue, presence, limitKey, limit = KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1])
checkTypes(key, 'zset', queue, 'zset', presence, 'zset', limitKey, 'string')
redis.call('SET', limitKey, ARGV[1])
local now = nowMs()
pruneLeases(key, now)
leaseExpire(key, now)
prune(queue, presence, now)
wakeLeaseWaiters(key, queue, presence, limit - redis.call('ZCARD', key))
return 0
