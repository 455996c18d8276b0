-- wakeRedisson tells Redisson's waiters that the lock is free, as Redisson 3.52.0's own unlock
-- does (prepended to release.lua; see docs/cli.md). held is the deleted hash as HGETALL gave
-- it; queue and deadlines are the lock's RFairLock queue and stale deadlines
-- (redisson_lock_queue:<name>, redisson_lock_timeout:<name>, with <name> as Redisson writes it:
-- "{key}", or the key itself when it has a "{"), whose tail names the channels too.
--
-- An RReadWriteLock (its hash has a "mode" field) is told on redisson_rwlock:<name> with
-- READ_UNLOCK_MESSAGE (1), which wakes every waiter, as a write unlock does. Any other lock is
-- told on redisson_lock__channel:<name> with UNLOCK_MESSAGE (0); an RFairLock's next waiter
-- listens on a channel of its own, <that channel>:<queue entry>, and is told there: the first
-- entry of the queue whose stale deadline has not passed (Redisson's unlock drops the stale
-- ones first; this only reads the queue). Each message goes out with PUBLISH and, where the
-- server has it, SPUBLISH: Redisson subscribes with SSUBSCRIBE on a cluster that has sharded
-- Pub/Sub, and the two reach different subscribers.
local REDISSON_QUEUE_PREFIX = 'redisson_lock_queue:'
local REDISSON_UNLOCK, REDISSON_READ_UNLOCK = '0', '1'

local function redissonPublish(channel, message)
  redis.call('PUBLISH', channel, message)
  pcall(redis.call, 'SPUBLISH', channel, message)
end

local function wakeRedisson(held, queue, deadlines)
  local name = string.sub(queue, #REDISSON_QUEUE_PREFIX + 1)
  for i = 1, #held, 2 do
    if held[i] == 'mode' then
      redissonPublish('redisson_rwlock:' .. name, REDISSON_READ_UNLOCK)
      return
    end
  end
  local channel = 'redisson_lock__channel:' .. name
  -- First: reading the queue fails when its key holds another type, which anyone may write.
  redissonPublish(channel, REDISSON_UNLOCK)
  local now = nowMs()
  for _, entry in ipairs(redis.call('LRANGE', queue, 0, WAKE_SCAN - 1)) do
    local deadline = redis.call('ZSCORE', deadlines, entry)
    if not deadline or tonumber(deadline) > now then
      redissonPublish(channel .. ':' .. entry, REDISSON_UNLOCK)
      return
    end
  end
end
