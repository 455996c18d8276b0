-- One attempt to take KEYS[1]: SET NX PX with a fencing token, FIFO queue, re-entry.
-- KEYS: lock, fence counter, wait queue (score = arrival), presence (score = deadline ms)
-- ARGV: value, ttl ms, re-entry rand ('' = not re-entrant), queue entry ('' = do not queue;
--       '<waiter id>|<ttl ms>|<value>'), presence window ms, fence counter lifetime ms,
--       acquired event, waiting event
-- Returns {acquired 0/1, value (ours, or the holder's), token, waiters, pttl ms[, queue position]}.
local key, fence, queue, presence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value, ttl, rand, entry = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local window, fenceTTL = tonumber(ARGV[5]), ARGV[6]
local acquiredEvent, waitingEvent = ARGV[7], ARGV[8]

local cur = redis.call('GET', key)

if cur and entry ~= '' and rand == '' and sameHolder(cur, value) then
  -- Handed to us by a release of our own client while this attempt was on its way.
  dequeue(queue, presence, entry)
  return {1, cur, redis.call('GET', fence) or '0', redis.call('ZCARD', queue), redis.call('PTTL', key)}
end

if cur and rand ~= '' then
  local base, r, n = string.match(cur, '^(.*:(%x+)):(%d+)$')
  if r == rand then
    -- Re-entry by the same owner: count + 1, same token, and never shorten the TTL.
    local v = base .. ':' .. (tonumber(n) + 1)
    redis.call('SET', key, v, 'KEEPTTL')
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, ttl)
    end
    local token = redis.call('GET', fence) or '0'
    local waiters = redis.call('ZCARD', queue)
    event(acquiredEvent, ',"value":' .. cjson.encode(v) .. ',"token":' .. token .. ',"waiters":' .. waiters)
    return {1, v, token, waiters, redis.call('PTTL', key)}
  end
end

local now = nowMs()
local waiters = redis.call('ZCARD', queue)
if waiters > 0 then
  waiters = prune(queue, presence, now)
end

if not cur then
  local head = nil
  if waiters > 0 then
    head = liveHead(queue, presence)
  end
  if head == nil or head == entry then
    value = stamp(value, now)
    redis.call('SET', key, value, 'PX', ttl)
    local token = nextToken(fence, fenceTTL)
    if head then
      dequeue(queue, presence, head)
      waiters = waiters - 1
    end
    event(acquiredEvent, ',"value":' .. cjson.encode(value) .. ',"token":' .. token .. ',"waiters":' .. waiters)
    return {1, value, token, waiters, ttl}
  end
  -- Free, but another waiter is first: make sure it knows (the holder may have expired).
  wake(head, key)
end

local position = -1
if entry ~= '' then
  local added = false
  if not redis.call('ZSCORE', queue, entry) then
    local ticket = now
    local last = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')
    if last[2] and tonumber(last[2]) >= ticket then
      ticket = tonumber(last[2]) + 1
    end
    redis.call('ZADD', queue, ticket, entry)
    waiters = waiters + 1
    added = true
  end
  redis.call('ZADD', presence, now + window, entry)
  redis.call('PEXPIRE', queue, window * 2)
  redis.call('PEXPIRE', presence, window * 2)
  if added then
    event(waitingEvent, ',"waiters":' .. waiters)
  end
  position = redis.call('ZRANK', queue, entry)
end

local pttl = 0
if cur then
  pttl = redis.call('PTTL', key)
end
return {0, cur or '', '0', waiters, pttl, position}
