-- One attempt of one Acquire (operation id op) to take a permit of the lease semaphore at
-- KEYS[1] (docs/value-format.md, "Lease sets"), in arrival order: a waiter is granted a
-- permit only while it is among the first (limit - permits out) live waiters, and a
-- TryAcquire (no queue entry) only while fewer live waiters than free permits are queued.
-- KEYS: lease set, fence counter, wait queue, presence, ended operations, limit
-- ARGV: op, ttl ms, queue entry ('' = do not queue; '<op>|<ttl ms>|p|<value>'), presence
--       window ms, fence counter lifetime ms, the Semaphore's limit (while the limit key is
--       absent: written there), acquired event, waiting event, the value's fields before its
--       timestamp, after it (the server stamps the member it writes with its own clock)
-- Returns {status, member, token, waiters, pttl ms, position}: status 1 granted (pttl: the
-- permit's), 0 not (pttl: until the next permit out runs out, 0 if none; position: how many
-- waiters are served before this one), -2 op has ended (a late copy of a request of an
-- Acquire that already returned: it must not take a permit for nobody).
local key, fence, queue, presence, done, limitKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op, ttl, entry, window, fenceTTL, default = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local acquiredEvent, waitingEvent, beforeStamp, afterStamp = ARGV[7], ARGV[8], ARGV[9], ARGV[10]

-- grantable is the first n live waiters in arrival order (entries without a presence entry
-- are dropped on the way, as liveHead does): the waiters that n free permits go to.
local function grantable(n)
  local out, from = {}, 0
  while #out < n do
    local entries = redis.call('ZRANGE', queue, from, from + n - #out - 1)
    if #entries == 0 then
      return out
    end
    for _, e in ipairs(entries) do
      if redis.call('ZSCORE', presence, e) then
        out[#out + 1] = e
        from = from + 1
      else
        redis.call('ZREM', queue, e)
      end
    end
  end
  return out
end

-- Reads before any write (protocol/lib.lua): ended, limit, lease set, queue, presence, fence.
if ended(done, op) then
  return {-2, '', '0', 0, 0, -1}
end
leaseKind(key, 'p')
local limitText = redis.call('GET', limitKey)
local mine, deadline = leaseOf(key, op)
local waiters = redis.call('ZCARD', queue)
redis.call('ZCARD', presence)
local last = redis.call('GET', fence)
local us, ms = clock()
local now = tonumber(ms)

if mine and deadline > now then
  -- Ours already: an earlier copy of this request ran, and its reply was lost, so its token
  -- was never seen: this one draws a fresh one, above it.
  if entry ~= '' then
    dequeue(queue, presence, entry)
  end
  return {1, mine, nextToken(fence, fenceTTL, last, us), redis.call('ZCARD', queue), deadline - now, -1}
end

local limit = permitLimit(limitText)
if not limitText then
  limit = tonumber(default)
  redis.call('SET', limitKey, default) -- the first Acquire writes it; Resize changes it
elseif not limit then
  -- Not ours to guess, nor to overwrite (that would hide it): nothing is granted until a
  -- Resize writes a count again.
  error(redis.error_reply('ERR locklib: ' .. limitKey .. ' holds ' .. cjson.encode(limitText) ..
    ', not a count of at least 1 (Semaphore.Resize sets it)'))
end
pruneLeases(key, now)
local free = limit - redis.call('ZCARD', key)
if waiters > 0 then
  waiters = prune(queue, presence, now)
end
local first = {}
if free > 0 and waiters > 0 then
  first = grantable(free)
end
local granted = free > 0 and #first < free
if free > 0 and not granted and entry ~= '' then
  for _, e in ipairs(first) do
    granted = granted or e == entry
  end
end

if granted then
  local token = nextToken(fence, fenceTTL, last, us)
  local member = 'p|' .. op .. '|' .. beforeStamp .. ms .. afterStamp
  redis.call('ZADD', key, now + ttl, member)
  leaseExpire(key, now)
  if entry ~= '' and redis.call('ZREM', queue, entry) == 1 then
    redis.call('ZREM', presence, entry)
    waiters = waiters - 1
    -- A change that freed more permits than it wakes (a Resize: WAKE_RUN at most) leaves
    -- waiters that would hear only at their next poll; each grant from the queue wakes the
    -- first of them (now at rank WAKE_RUN - 1, a permit still free for it).
    if free > WAKE_RUN then
      local next = redis.call('ZRANGE', queue, WAKE_RUN - 1, WAKE_RUN - 1)[1]
      if next then
        wake(next, key)
      end
    end
  end
  event(acquiredEvent, ',"value":' .. cjson.encode(member) .. ',"token":' .. token .. ',"waiters":' .. digits(waiters))
  return {1, member, token, waiters, ttl, -1}
end

-- Free permits that go to waiters ahead: make sure they know (a holder may have expired).
for _, e in ipairs(first) do
  wake(e, key)
end
local position = -1
if entry ~= '' then
  waiters = enqueue(queue, presence, entry, now, window, waiters, waitingEvent)
  position = math.max(redis.call('ZRANK', queue, entry) - math.max(free, 0), 0)
end
local pttl = 0
local next = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
if next then
  pttl = tonumber(next) - now
end
return {0, '', '0', waiters, pttl, position}
