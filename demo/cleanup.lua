-- Removes what a demo run left of one lock on one instance. KEYS[1] is the lock key, deleted
-- only if it still holds ARGV[1] (the value this run's last section on it took; '' for none:
-- compare-and-delete);
-- KEYS[2..] are its companions (fence counter, wait queue and presence, levels, ended set),
-- deleted only when no lock is left, so another client's lock keeps its fence and queue.
-- Returns the number of keys deleted.
local deleted = 0
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then
  deleted = redis.call('DEL', KEYS[1])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return deleted
end
return deleted + redis.call('DEL', unpack(KEYS, 2))
