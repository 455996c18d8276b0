-- One attempt of one Obtain (operation id op) to take KEYS[1]: SET NX PX with a fencing token,
-- FIFO queue, re-entry.
-- KEYS: lock, fence counter, wait queue (score = arrival), presence (score = deadline ms),
--       levels (a re-entrant lock's operation ids), ended operations
-- ARGV: value, ttl ms, re-entry rand ('' = not re-entrant), op, queue entry ('' = do not
--       queue; '<op>|<ttl ms>|<value>'), presence window ms, fence counter lifetime ms,
--       acquired event, waiting event, value's fields before its timestamp, value's
--       fields after it (the server stamps the value it writes with its own clock)
-- Returns {status, value (ours, or the holder's), token, waiters, pttl ms[, queue position]}:
-- status 1 taken, 0 not taken, -2 op has ended (a late copy of a request of an Obtain that
-- already returned: it must not take the lock for nobody).
local key, fence, queue, presence, levels, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local value, ttl, rand, op, entry = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local window, fenceTTL = tonumber(ARGV[6]), ARGV[7]
local acquiredEvent, waitingEvent, beforeStamp, afterStamp = ARGV[8], ARGV[9], ARGV[10], ARGV[11]

-- Reads before any write (protocol/lib.lua): ended, lock, queue and fence here (or fence with
-- its write, when that is the first: swapToken); presence is read (by prune) before any
-- write when there are waiters, and written first otherwise; levels are read (SCARD) before
-- a re-entry and deleted (which cannot fail) before a first entry.
if ended(done, op) then
  return {-2, '', '0', 0, 0}
end
local cur = redis.call('GET', key)
local waiters = redis.call('ZCARD', queue)
-- The fence counter is read here when a path below may write before its token (a queue
-- pruned) or reports the holder's; a free key without waiters reads it as it writes it
-- (swapToken).
local fenceRead = cur ~= false or waiters > 0
local last = nil
if fenceRead then
  last = redis.call('GET', fence)
end

if cur and rand == '' and sameHolder(cur, value) then
  -- Ours already: an earlier copy of this request ran, or a release of our own client
  -- handed the lock to this waiter while this attempt was on its way.
  if entry ~= '' then
    dequeue(queue, presence, entry)
  end
  return {1, cur, currentToken(fence, fenceTTL, last), redis.call('ZCARD', queue), redis.call('PTTL', key)}
end

if cur and rand ~= '' then
  local base, r = reentrantParts(cur)
  -- Without its levels set (evicted) nobody knows which levels are held: not re-entered.
  if r == rand and redis.call('SCARD', levels) > 0 then
    local token = currentToken(fence, fenceTTL, last)
    if entry ~= '' then
      -- It queued while another owner held the key; its own owner took it meanwhile.
      dequeue(queue, presence, entry)
      waiters = redis.call('ZCARD', queue)
    end
    if redis.call('SADD', levels, op) == 1 then
      -- A new level: count + 1, same token, and the TTL never shortened.
      local n = redis.call('SCARD', levels)
      showCount(key, base, n)
      cur = base .. ':' .. n
      extendTo(key, levels, fence, ttl)
      event(acquiredEvent, ',"value":' .. cjson.encode(cur) .. ',"token":' .. token .. ',"waiters":' .. digits(waiters))
    end -- else an earlier copy of this request entered already
    return {1, cur, token, waiters, redis.call('PTTL', key)}
  end
end

local us, ms = clock()
local now = tonumber(ms)
if waiters > 0 then
  waiters = prune(queue, presence, now)
end

if not cur then
  local head = nil
  if waiters > 0 then
    head = liveHead(queue, presence)
  end
  if head == nil or head == entry then
    local token
    if fenceRead then
      token = nextToken(fence, fenceTTL, last, us)
    else
      token = swapToken(fence, fenceTTL, us)
    end
    value = beforeStamp .. ms .. afterStamp
    redis.call('SET', key, value, 'PX', ARGV[2])
    if rand ~= '' then
      redis.call('DEL', levels)
      redis.call('SADD', levels, op)
      redis.call('PEXPIRE', levels, ttl)
    end
    if head then
      dequeue(queue, presence, head)
      waiters = waiters - 1
    end
    event(acquiredEvent, ',"value":' .. cjson.encode(value) .. ',"token":' .. token .. ',"waiters":' .. digits(waiters))
    return {1, value, token, waiters, ttl}
  end
  -- Free, but another waiter is first: make sure it knows (the holder may have expired).
  wake(head, key)
end

local position = -1
if entry ~= '' then
  waiters = enqueue(queue, presence, entry, now, window, waiters, waitingEvent)
  position = redis.call('ZRANK', queue, entry)
end

local pttl = 0
if cur then
  pttl = redis.call('PTTL', key)
end
return {0, cur or '', '0', waiters, pttl, position}
