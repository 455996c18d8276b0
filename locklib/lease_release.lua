-- Owner-checked release of one lease of lease set KEYS[1] (a read or write level, a permit,
-- by its member): the member goes, expired members with it, the set's TTL follows its latest
-- deadline left, and the waiters the change may admit are woken (wakeLeaseWaiters: every
-- reader at the head of the queue at once, a writer when the set is empty, as many permit
-- waiters as permits are free). There is no hand-off: a woken waiter takes its lease with
-- its own attempt.
-- KEYS: lease set, wait queue, presence, ended operations, limit (a semaphore's; none for
--       a read-write lock)
-- ARGV: member, op, released event
-- Returns {1 released | -1 not held | 2 a copy of this release ran already, waiters}.
local key, queue, presence, done, limit = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member, op, releasedEvent = ARGV[1], ARGV[2], ARGV[3]

-- Reads before any write (protocol/lib.lua): the set, the ended set when not held, the
-- queue, presence and limit when there are waiters. A lease that is still held was not
-- released by an earlier copy of this request (that removed the member, which nothing
-- gives back: the acquire takes nothing for an ended operation).
local _, ms = clock()
local now = tonumber(ms)
local deadline = redis.call('ZSCORE', key, member)
if not deadline or tonumber(deadline) <= now then
  if released(done, op) then
    return {2, redis.call('ZCARD', queue)}
  end
  finish(done, op .. '!', ms)
  return {-1, 0}
end
local waiters = redis.call('ZCARD', queue)
local permits = nil
if waiters > 0 then
  redis.call('ZCARD', presence)
  permits = redis.call('GET', limit)
end
redis.call('ZREM', key, member)
pruneLeases(key, now)
leaseExpire(key, now)
finish(done, op, ms)
if waiters > 0 then
  waiters = prune(queue, presence, now)
  local free = nil
  if permits then
    free = (permitLimit(permits) or 1) - redis.call('ZCARD', key)
  end
  wakeLeaseWaiters(key, queue, presence, free)
end
event(releasedEvent, ',"waiters":' .. digits(waiters))
return {1, waiters}
