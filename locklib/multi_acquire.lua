-- One attempt of one ObtainMulti (operation id op) to take every one of n lock keys, or
-- none: each key must be free (or hold op's own value: an earlier copy of this request ran)
-- and have no live waiter in its FIFO queue. A multi-key lock never queues and never jumps a
-- queue (docs/locklib.md, "Multi-key locks"): it waits outside by polling. Taken, every key
-- holds the same value and every fence counter the same token, above each counter and the
-- clock, so the token fences each key.
-- KEYS: per lock key, as lockKeys: lock, fence counter, wait queue, presence, levels
--       (unused), ended operations (6n keys)
-- ARGV: value, ttl ms, op, fence counter lifetime ms, value's fields before its timestamp,
--       value's fields after it, then per key its acquired event ('' = none)
-- Returns {status, value (ours, or the blocking key's holder's), token, waiters, pttl ms,
-- blocking key (1-based; 0 when taken)}: status 1 taken, 0 not taken (pttl: the longest of
-- the keys held by others, 0 when only queues block), -2 op has ended (a late copy of a
-- request of an ObtainMulti that already returned: it must not take the keys for nobody).
local n = #KEYS / 6
local value, ttl, op, fenceTTL, beforeStamp, afterStamp = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

-- counter is a fence counter's value as read, when it is locklib's (at most 18 digits:
-- nextToken's rule), else nil.
local function counter(last)
  if last and string.match(last, '^%d+$') and #last <= 18 then
    return tonumber(last)
  end
  return nil
end

-- Reads before any write (protocol/lib.lua): every key's ended set, lock, queue, fence
-- counter, and the presence set of a key with waiters; the writes come after all of them.
for i = 1, n do
  if ended(KEYS[i * 6], op) then
    return {-2, '', '0', 0, 0, 0}
  end
end
local cur, waiters, last = {}, {}, {}
local mine, blocking, total = 0, 0, 0
for i = 1, n do
  local b = (i - 1) * 6
  cur[i] = redis.call('GET', KEYS[b + 1])
  waiters[i] = redis.call('ZCARD', KEYS[b + 3])
  if waiters[i] > 0 then
    redis.call('ZCARD', KEYS[b + 4])
  end
  last[i] = redis.call('GET', KEYS[b + 2])
  if cur[i] and sameHolder(cur[i], value) then
    mine = mine + 1
  elseif cur[i] and blocking == 0 then
    blocking = i
  end
  total = total + waiters[i]
end

if mine == n then
  -- Ours already: an earlier copy of this request took every key. Its token is each
  -- counter's (nothing else can move them while we hold the keys); its validity the
  -- shortest PTTL.
  local token, pttl = nil, nil
  for i = 1, n do
    token = token or (counter(last[i]) and last[i])
    local left = redis.call('PTTL', KEYS[(i - 1) * 6 + 1])
    pttl = math.min(pttl or left, left)
  end
  if token then
    return {1, cur[1], token, total, pttl, 0}
  end
  -- Every counter was deleted meanwhile: taken again below, with a new token.
end

-- forget deletes op's own values from an earlier copy of this request that took every key,
-- of which some were deleted since (a partial set must not stay held for nobody).
local function forget()
  for i = 1, n do
    if cur[i] and sameHolder(cur[i], value) then
      redis.call('DEL', KEYS[(i - 1) * 6 + 1])
    end
  end
end

if blocking > 0 then
  local longest = 0
  for i = 1, n do
    if cur[i] and not sameHolder(cur[i], value) then
      longest = math.max(longest, redis.call('PTTL', KEYS[(i - 1) * 6 + 1]))
    end
  end
  forget()
  return {0, cur[blocking], '0', waiters[blocking], longest, blocking}
end

-- Every key is free (or ours): a live waiter queued on any of them comes first. It is
-- woken, as acquire.lua does, in case it has not heard that its key is free.
local us, ms = clock()
local now = tonumber(ms)
for i = 1, n do
  if waiters[i] > 0 then
    local b = (i - 1) * 6
    waiters[i] = prune(KEYS[b + 3], KEYS[b + 4], now)
    local head = liveHead(KEYS[b + 3], KEYS[b + 4])
    if head then
      wake(head, KEYS[b + 1])
      if blocking == 0 then
        blocking = i
      end
    end
  end
end
if blocking > 0 then
  forget()
  return {0, '', '0', waiters[blocking], 0, blocking}
end

-- Taken: one token above every key's counter and the clock (nextToken on the highest
-- counter, so that a counter ahead of the clock is counted on exactly, by INCR), written to
-- every counter.
local top = nil
for i = 1, n do
  local c = counter(last[i])
  if c and (top == nil or c > counter(last[top])) then
    top = i
  end
end
local token = us
if top then
  token = nextToken(KEYS[(top - 1) * 6 + 2], fenceTTL, last[top], us)
end
value = beforeStamp .. ms .. afterStamp
for i = 1, n do
  local b = (i - 1) * 6
  redis.call('SET', KEYS[b + 1], value, 'PX', ttl)
  redis.call('SET', KEYS[b + 2], token, 'PX', fenceTTL)
end
for i = 1, n do
  event(ARGV[6 + i], ',"value":' .. cjson.encode(value) .. ',"token":' .. token .. ',"waiters":' .. digits(waiters[i]))
end
return {1, value, token, total, tonumber(ttl), 0}
