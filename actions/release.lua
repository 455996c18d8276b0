-- Compare-and-delete (holder.lua is prepended): deletes KEYS[1] only when it still holds the
-- expected value. The fence counter is left alone: tokens must keep growing.
--
-- A lock deleted here was not let go by its holder, so no release told its waiters. The first
-- live waiter a locklib client queued (KEYS[2] wait queue, KEYS[3] presence deadlines) is
-- woken on ARGV[4+2n] .. <its client id>, and Redlock waiters hear "<key>\n<value>" on
-- ARGV[5+2n] (n = ARGV[3], holder.lua's hash pairs): they take the lock now instead of at
-- their next poll. Both are hints, so they are best effort: a server that refuses them (an
-- ACL without ZRANGE or PUBLISH) still gets the release, and without the queue keys (an ACL
-- that does not cover them, see act.go) only Redlock waiters are told.
local status, current = holder(KEYS[1])
if status == 'match' then
  redis.call('DEL', KEYS[1])
  -- A re-entrant locklib lock's levels set (KEYS[4], locklib.LevelsKey) goes with it.
  if KEYS[4] and redis.call('TYPE', KEYS[4])['ok'] == 'set' then
    redis.call('DEL', KEYS[4])
  end
  local n = tonumber(ARGV[3])
  local wakePrefix, releasedChannel = ARGV[4 + 2 * n], ARGV[5 + 2 * n]
  -- Queue entries are '<waiter id>|<ttl ms>|<value>', waiter ids '<client id>:<n>'
  -- (locklib/lib.lua); a waiter is live while its presence deadline has not passed.
  local function wakeLiveHead()
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    for _, entry in ipairs(redis.call('ZRANGE', KEYS[2], 0, 15)) do
      local deadline = redis.call('ZSCORE', KEYS[3], entry)
      if deadline and tonumber(deadline) >= now then
        local id, client = string.match(entry, '^(([^:|]+):[^|]*)|')
        if client then
          redis.call('PUBLISH', wakePrefix .. client, id .. '\n' .. KEYS[1])
        end
        return
      end
    end
  end
  if KEYS[3] then
    pcall(wakeLiveHead)
  end
  if type(current) == 'string' then
    pcall(redis.call, 'PUBLISH', releasedChannel, KEYS[1] .. '\n' .. current)
  end
end
return {status, current}
