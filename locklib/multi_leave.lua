-- An ObtainMulti gave up (its context ended, or an attempt failed) and may have left its
-- value on its keys: taken by an attempt whose answer it did not wait for. Delete it from
-- every key that holds it, record op as ended on each key (a copy of one of its requests
-- that runs later takes nothing), and wake the first live waiter of each key left free.
-- KEYS: per lock key, as lockKeys (6n keys). ARGV: op, the value (the server stamped the one
-- it wrote, so it is compared without its timestamp: sameHolder).
local n = #KEYS / 6
local op, value = ARGV[1], ARGV[2]
for i = 1, n do
  local b = (i - 1) * 6
  checkTypes(KEYS[b + 1], 'string', KEYS[b + 3], 'zset', KEYS[b + 4], 'zset', KEYS[b + 6], 'zset')
end
local ms = nowMs()
for i = 1, n do
  local b = (i - 1) * 6
  local cur = redis.call('GET', KEYS[b + 1])
  if cur and sameHolder(cur, value) then
    redis.call('DEL', KEYS[b + 1])
    cur = false
  end
  finish(KEYS[b + 6], op .. '!', ms)
  if not cur then
    local head = liveHead(KEYS[b + 3], KEYS[b + 4])
    if head then
      wake(head, KEYS[b + 1])
    end
  end
end
return 0
