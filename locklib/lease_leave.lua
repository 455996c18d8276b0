-- An Obtain of a lease (a read or write level, a permit) gave up and may have left something
-- behind: its queue entry, or the lease an attempt whose answer it did not wait for took.
-- Drop both, and record op as ended so that a copy of one of its requests that runs later
-- takes nothing; then wake the waiters the change may admit (as a release does).
-- KEYS: lease set, wait queue, presence, ended operations, limit (a semaphore's)
-- ARGV: op, queue entry ('' = none)
local key, queue, presence, done, limit = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, entry = ARGV[1], ARGV[2]
checkTypes(key, 'zset', queue, 'zset', presence, 'zset', done, 'zset', limit, 'string')
local now = nowMs()
local member = leaseOf(key, op)
if member then
  redis.call('ZREM', key, member)
end
if entry ~= '' then
  dequeue(queue, presence, entry)
end
finish(done, op .. '!', now)
pruneLeases(key, now)
leaseExpire(key, now)
prune(queue, presence, now)
local free = nil
local permits = redis.call('GET', limit)
if permits then
  free = (permitLimit(permits) or 1) - redis.call('ZCARD', key)
end
wakeLeaseWaiters(key, queue, presence, free)
return 0
