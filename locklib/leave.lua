-- A waiter gives up (its context ended): drop its queue entry; if the lock was just handed
-- to it, release it; and if the lock is free, wake the next waiter so the hand-off does
-- not stall on the one that left.
-- KEYS: lock, wait queue, presence. ARGV: queue entry '<waiter id>|<ttl ms>|<value>'.
local key, queue, presence = KEYS[1], KEYS[2], KEYS[3]
dequeue(queue, presence, ARGV[1])
local _, _, _, value = entryParts(ARGV[1])
local cur = redis.call('GET', key)
if cur and plain(value) and sameHolder(cur, value) then
  redis.call('DEL', key)
  cur = false
end
if not cur then
  local head = liveHead(queue, presence)
  if head then
    wake(head, key)
  end
end
return 0
