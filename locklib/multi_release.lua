-- Owner-checked release of one multi-key Lock (operation id op) on n lock keys, all at once:
-- every key that still holds its value is deleted, and the first live waiter of each freed
-- key is woken (a multi-key lock hands nothing over: its waiters' clients take the keys with
-- their next attempt).
-- KEYS: per lock key, as lockKeys: lock, fence counter, wait queue, presence, levels
--       (unused), ended operations (6n keys)
-- ARGV: value, op, then per key its released event ('' = none)
-- Returns {status, the first key (1-based) that did not hold the value, 0 if none}: status 1
-- every key released, 2 a copy of this release ran already, -1 no key held it, -3 some keys
-- did not hold it any more (the others are released).
local n = #KEYS / 6
local value, op = ARGV[1], ARGV[2]

-- Reads before any write (protocol/lib.lua): every lock and queue, and the presence set of a
-- key with waiters; the ended sets are written best effort (finish).
local held, waiters = {}, {}
local gone, count = 0, 0
for i = 1, n do
  local b = (i - 1) * 6
  held[i] = redis.call('GET', KEYS[b + 1]) == value
  waiters[i] = redis.call('ZCARD', KEYS[b + 3])
  if waiters[i] > 0 then
    redis.call('ZCARD', KEYS[b + 4])
  end
  if held[i] then
    count = count + 1
  elseif gone == 0 then
    gone = i
  end
end
if count == 0 and released(KEYS[6], op) then
  return {2, 0}
end

local _, ms = clock()
local now = tonumber(ms)
-- A release that found every key is op's success; otherwise op ended without one (as
-- release.lua records a release that found the lock gone), and a copy of it that runs again
-- reports the same.
local entry = op
if count < n then
  entry = op .. '!'
end
for i = 1, n do
  local b = (i - 1) * 6
  if held[i] then
    redis.call('DEL', KEYS[b + 1])
  end
  finish(KEYS[b + 6], entry, ms)
  if waiters[i] > 0 then
    waiters[i] = prune(KEYS[b + 3], KEYS[b + 4], now)
    local head = liveHead(KEYS[b + 3], KEYS[b + 4])
    if head and (held[i] or redis.call('EXISTS', KEYS[b + 1]) == 0) then
      wake(head, KEYS[b + 1])
    end
  end
  if held[i] then
    event(ARGV[2 + i], ',"waiters":' .. digits(waiters[i]))
  end
end
if count == 0 then
  return {-1, gone}
end
if count < n then
  return {-3, gone}
end
return {1, 0}
