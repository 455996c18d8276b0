-- Semaphore.Status: the limit of the semaphore at KEYS[1] ('' when the limit key is
-- absent), the live permits out, and the live waiters. Read only: expired members and
-- waiters are counted out, not removed. KEYS: lease set, presence, limit.
local now = nowMs()
return {redis.call('GET', KEYS[3]) or '', redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCOUNT', KEYS[2], now, '+inf')}
