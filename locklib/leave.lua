-- An Obtain gave up (its context ended, or an attempt failed) and may have left something
-- behind: its queue entry, the lock taken by an attempt whose answer it did not wait for, or
-- the lock handed to it by a release. Drop all of it, and record op as ended so that a copy
-- of one of its requests that runs later does not take the lock for nobody. If the lock is
-- free, the next waiter is woken so the hand-off does not stall on the one that left.
-- KEYS: lock, wait queue, presence, levels, ended operations
-- ARGV: op, queue entry ('' = none), the plain lock's value, or a re-entrant owner's rand
--       (the value's timestamp is the server's, so a re-entrant owner is known by its rand),
--       re-entrant '1'/'0'
local key, queue, presence, levels, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, entry, value = ARGV[1], ARGV[2], ARGV[3]
checkTypes(key, 'string', queue, 'zset', presence, 'zset', levels, 'set', done, 'zset')
local cur = redis.call('GET', key)
if ARGV[4] == '1' then
  local base, rand = nil, nil
  if cur then
    base, rand = reentrantParts(cur)
  end
  if rand == value and redis.call('SISMEMBER', levels, op) == 1 then
    local n = redis.call('SCARD', levels) - 1
    if n > 0 then
      redis.call('SREM', levels, op)
      showCount(key, base, n)
    else
      redis.call('DEL', key, levels)
      cur = false
    end
  end
elseif cur and sameHolder(cur, value) then
  redis.call('DEL', key)
  cur = false
end
if entry ~= '' then
  dequeue(queue, presence, entry)
end
finish(done, op .. '!')
if not cur then
  local head = liveHead(queue, presence)
  if head then
    wake(head, key)
  end
end
return 0
