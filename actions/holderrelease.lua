-- Per-holder compare-and-release of a shared lock (protocol.LuaLibrary and redisson.lua are
-- prepended; actions/holder.go builds KEYS and ARGV). It removes one holder, only if it still
-- holds exactly what the operator saw, and never anything of another holder. ARGV[1] names
-- the layout:
--
-- 'lease'        a lockscope lease set (docs/value-format.md "Lease sets"). KEYS[1] the sorted
--                set, KEYS[2], KEYS[3] and KEYS[4] its wait queue, presence and limit (absent
--                on a cluster when not in its slot); ARGV[2] the owner (the values' rand),
--                ARGV[3] its members as seen, sorted, one a line.
-- 'redisson-rw'  a Redisson RReadWriteLock. KEYS[1] the hash, KEYS[2..] the holder's read
--                levels' keys ({key}:<owner>:rwlock_timeout:<1..count>); ARGV[2] the owner
--                "<uuid>:<threadId>", ARGV[3] the lock's channel, ARGV[4] n, ARGV[5..4+2n] the
--                mode and the owner's fields as seen (field, count pairs).
-- 'permit'       a Redisson RPermitExpirableSemaphore. KEYS[1] the string of permits
--                available, KEYS[2] its permits ({key}:timeout); ARGV[2] the permit id (16
--                raw bytes), ARGV[3] its deadline as seen, ARGV[4] the semaphore's channel.
--
-- The last two ARGV are the operation and a TTL in ms: 'release' (the TTL unused) removes the
-- holder; 'extend' gives each of its leases that TTL from now where that is longer (never
-- shorter: ZADD GT for lease set members and permits, PEXPIRE only upwards for Redisson's keys)
-- and the key the latest deadline, or answers 'longer' with the holder's TTL left (ms) when
-- every lease already lives longer.
--
-- Returns {status, current} as holder.lua does: 'match' (released or extended), 'other' (the
-- holder now holds something else: current is what, in the seen form), 'gone' (the key or the
-- holder is not there), 'type' (the key is not of the layout: current its type), 'longer'.

local OP, TTL = ARGV[#ARGV - 1], tonumber(ARGV[#ARGV])

local function sameSet(list, text)
  local want, n = {}, 0
  for line in string.gmatch(text, '[^\n]+') do
    want[line] = true
    n = n + 1
  end
  if #list ~= n then
    return false
  end
  for _, v in ipairs(list) do
    if not want[v] then
      return false
    end
  end
  return true
end

-- A lease set: drop expired members first (they hold nothing: every writer does so), remove
-- the owner's members, give the key the latest deadline left as its TTL (or delete it), and
-- wake the waiters the change may admit, as locklib's release does (wakeLeaseWaiters: the
-- readers at the head, a writer once the set is empty, as many permit waiters as permits are
-- free). That wake-up drops the waiters whose presence has passed first (prune); where the ACL
-- refuses it, the first live waiter
-- is woken with a read of the queue alone (wakeLiveHead), as release.lua does.
local function wakeAdmitted(key, queue, presence, free, now)
  prune(queue, presence, now)
  wakeLeaseWaiters(key, queue, presence, free)
end

local function releaseLease(key, owner, seen, queue, presence, limit)
  local now = nowMs()
  pruneLeases(key, now)
  local mine = {}
  for _, m in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if leaseParts(m) and leaseOwner(m) == owner then
      mine[#mine + 1] = m
    end
  end
  if #mine == 0 then
    return 'gone', ''
  end
  table.sort(mine)
  if not sameSet(mine, seen) then
    return 'other', table.concat(mine, '\n')
  end
  if OP == 'extend' then
    local longest = 0
    for _, m in ipairs(mine) do
      longest = math.max(longest, tonumber(redis.call('ZSCORE', key, m)) - now)
    end
    if longest >= TTL then
      return 'longer', tostring(longest)
    end
    for _, m in ipairs(mine) do
      redis.call('ZADD', key, 'XX', 'GT', now + TTL, m)
    end
    leaseExpire(key, now)
    return 'match', seen
  end
  redis.call('ZREM', key, unpack(mine))
  leaseExpire(key, now)
  if presence then
    local free = nil
    local permits = limit and redis.call('GET', limit)
    if permits then
      free = (tonumber(permits) or 1) - redis.call('ZCARD', key)
    end
    if not pcall(wakeAdmitted, key, queue, presence, free, now) then
      pcall(wakeLiveHead, key, queue, presence)
    end
  end
  return 'match', seen
end

-- A Redisson read-write lock: what Redisson 3.52.0's unlock does for the holder's every
-- level at once (RedissonReadLock/RedissonWriteLock.unlockInnerAsync): HDEL its fields, DEL
-- its levels' keys; when no holder is left, DEL the hash and tell the waiters (1,
-- READ_UNLOCK_MESSAGE, which wakes every waiter: Redisson's read unlock sends 0, which wakes
-- one, its write unlock 1); else re-time the hash to the longest level left, as Redisson does.
local function releaseRedissonRW(key, owner, channel, npairs)
  local mode = redis.call('HGET', key, 'mode')
  if not mode then
    return 'gone', ''
  end
  local cur = {'mode', mode}
  for _, f in ipairs({owner, owner .. ':write'}) do
    local v = redis.call('HGET', key, f)
    if v then
      cur[#cur + 1] = f
      cur[#cur + 1] = v
    end
  end
  if #cur == 2 then
    return 'gone', ''
  end
  local same = #cur == 2 * npairs
  for i = 0, npairs - 1 do
    if same and redis.call('HGET', key, ARGV[5 + 2 * i]) ~= ARGV[6 + 2 * i] then
      same = false
    end
  end
  if not same then
    return 'other', cur
  end
  if OP == 'extend' then
    -- A reader's lease is its levels' keys, a writer's the hash: each is raised to TTL, never
    -- lowered, and the hash lives at least as long as every level (as Redisson keeps it).
    local longest = redis.call('PTTL', key)
    if #KEYS > 1 then
      longest = -3
      for i = 2, #KEYS do
        longest = math.max(longest, redis.call('PTTL', KEYS[i]))
      end
    end
    if longest == -1 or longest >= TTL then
      return 'longer', tostring(longest)
    end
    for i = 1, #KEYS do
      local left = redis.call('PTTL', KEYS[i])
      if left >= 0 and left < TTL then
        redis.call('PEXPIRE', KEYS[i], TTL)
      end
    end
    return 'match', cur
  end
  redis.call('HDEL', key, owner, owner .. ':write')
  for i = 2, #KEYS do
    redis.call('DEL', KEYS[i])
  end
  if redis.call('HLEN', key) > 1 then
    if mode == 'write' then
      redis.call('HSET', key, 'mode', 'read')
    end
    -- The levels left are named as Redisson names them (scanner.RedissonLevelKey), in key's slot.
    local prefix = key
    if not string.find(key, '{', 1, true) then
      prefix = '{' .. key .. '}'
    end
    local longest = -3
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local n = tonumber(redis.call('HGET', key, f))
      if f ~= 'mode' and n then
        for i = n, 1, -1 do
          longest = math.max(longest, redis.call('PTTL', prefix .. ':' .. f .. ':rwlock_timeout:' .. i))
        end
      end
    end
    if longest > 0 then
      redis.call('PEXPIRE', key, longest)
      return 'match', cur
    end
  end
  redis.call('DEL', key)
  pcall(redissonPublish, channel, REDISSON_READ_UNLOCK)
  return 'match', cur
end

local function hexOf(raw)
  return (string.gsub(raw, '.', function(c) return string.format('%02x', string.byte(c)) end))
end

-- A Redisson permit: what RPermitExpirableSemaphore.release(id) does (ZREM, INCRBY 1, publish
-- the count available on the semaphore's channel), when the permit has the deadline seen.
local function releasePermit(available, permits, id, deadline, channel)
  local kind = redis.call('TYPE', available)['ok']
  if kind ~= 'string' then
    if kind == 'none' then
      return 'gone', ''
    end
    return 'type', kind
  end
  local score = redis.call('ZSCORE', permits, id)
  if not score then
    return 'gone', ''
  end
  if tonumber(score) ~= tonumber(deadline) then
    return 'other', hexOf(id) .. ' ' .. string.format('%d', tonumber(score))
  end
  if OP == 'extend' then
    -- The deadline is on the server's clock here (Redisson scores it on its client's).
    local now = nowMs()
    if tonumber(score) - now >= TTL then
      return 'longer', string.format('%d', tonumber(score) - now)
    end
    redis.call('ZADD', permits, 'XX', 'GT', now + TTL, id)
    return 'match', hexOf(id) .. ' ' .. string.format('%d', now + TTL)
  end
  redis.call('ZREM', permits, id)
  local left = redis.call('INCR', available)
  pcall(redissonPublish, channel, left)
  return 'match', hexOf(id) .. ' ' .. deadline
end

local layout = ARGV[1]
local kind = redis.call('TYPE', KEYS[1])['ok']
local want = {lease = 'zset', ['redisson-rw'] = 'hash', permit = 'string'}
if kind == 'none' then
  return {'gone', ''}
end
if kind ~= want[layout] then
  return {'type', kind}
end
local status, current
if layout == 'lease' then
  status, current = releaseLease(KEYS[1], ARGV[2], ARGV[3], KEYS[2], KEYS[3], KEYS[4])
elseif layout == 'redisson-rw' then
  status, current = releaseRedissonRW(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[4]))
else
  status, current = releasePermit(KEYS[1], KEYS[2], ARGV[2], ARGV[3], ARGV[4])
end
return {status, current}
