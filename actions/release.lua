-- Compare-and-delete (protocol.LuaLibrary and holder.lua are prepended): deletes KEYS[1] only
-- when it still holds the expected value. The fence counter is left alone: tokens must keep
-- growing.
--
-- A lock deleted here was not let go by its holder, so no release told its waiters. The first
-- live waiter a locklib client queued (KEYS[2] wait queue, KEYS[3] presence deadlines) is
-- woken with the wake-up a release publishes (the library's wakeLiveHead, which only reads
-- the queue: an ACL that may not change it still wakes), and Redlock waiters hear
-- "<key>\n<value>" on REDLOCK_RELEASED: they take the lock now instead of at their next poll.
-- A Redisson lock's waiters (a hash deleted) are woken as Redisson's own unlock wakes them
-- (wakeRedisson, KEYS[5] its fair queue, KEYS[6] the queue's stale deadlines).
-- All are hints, so they are best effort: a server that refuses them (an ACL without ZRANGE,
-- ZSCORE, LRANGE or PUBLISH) still gets the release, and without the queue keys (an ACL that
-- does not cover them, see act.go) only Redlock waiters are told.
local status, current = holder(KEYS[1])
if status == 'match' then
  redis.call('DEL', KEYS[1])
  -- A re-entrant locklib lock's levels set (KEYS[4], protocol.LevelsKey) goes with it.
  if KEYS[4] and redis.call('TYPE', KEYS[4])['ok'] == 'set' then
    redis.call('DEL', KEYS[4])
  end
  if KEYS[3] then
    pcall(wakeLiveHead, KEYS[1], KEYS[2], KEYS[3])
  end
  if KEYS[5] and type(current) == 'table' then
    pcall(wakeRedisson, current, KEYS[5], KEYS[6])
  end
  if type(current) == 'string' then
    pcall(redis.call, 'PUBLISH', REDLOCK_RELEASED, KEYS[1] .. '\n' .. current)
  end
end
return {status, current}
