-- One attempt of one ObtainRead or ObtainWrite (operation id op) to take a read or write lease
-- of the read-write lock KEYS[1], a lease set (docs/value-format.md, "Lease sets"): many
-- readers or one writer, each lease expiring on its own, FIFO with the lock's wait queue.
-- A writer is granted when the set holds no live member and it is the queue's live head (or
-- the queue is empty); a reader when no other owner holds a write lease and no live writer
-- waits ahead of it in the queue (so a stream of readers never starves a queued writer). An
-- owner (ARGV[6], a re-entrant owner's rand) that holds a lease enters again at once: a read
-- while it holds a read or a write lease (a write then read is a downgrade in progress), a
-- write while it holds a write lease; a write while it holds only read leases is refused
-- (upgrade: two owners doing it at once would wait for each other for ever).
-- KEYS: lease set, fence counter, wait queue (score = arrival), presence (score = deadline
--       ms), ended operations
-- ARGV: mode ('r' or 'w'), op, the value's fields before its timestamp, the value's fields
--       after it (the server stamps the member's value with its clock), ttl ms, owner ('' =
--       not re-entrant), queue entry ('' = do not queue; '<op>|<ttl ms>|<mode>|<value>'),
--       presence window ms, fence counter lifetime ms, acquired event, waiting event
-- Returns {status, member (ours, or one that blocks us), token, waiters, pttl ms, queue
-- position}: status 1 taken, 0 not taken, -2 op has ended (a late copy of a request of an
-- Obtain that already returned: it must not take a lease for nobody), -4 upgrade refused.
-- The token of a write grant is drawn from the fence counter (as a lock's); a read grant
-- and a re-entered write report the counter as it is, except that a read that finds no
-- counter sets it from the server's clock first (readToken).
local key, fence, queue, presence, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local mode, op, beforeStamp, afterStamp = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl, owner, entry = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local window, fenceTTL = tonumber(ARGV[8]), ARGV[9]
local acquiredEvent, waitingEvent = ARGV[10], ARGV[11]

-- Reads before any write (protocol/lib.lua): ended, the set (leaseScan), the queue, the
-- fence counter, and presence (prune) when there are waiters; presence is written first
-- otherwise.
if ended(done, op) then
  return {-2, '', '0', 0, 0, -1}
end
leaseKind(key, 'rw')
local us, ms = clock()
local now = tonumber(ms)
local live, _, expired = leaseScan(key, now)
local waiters = redis.call('ZCARD', queue)
local last = redis.call('GET', fence)
if waiters > 0 then
  waiters = prune(queue, presence, now)
end

-- counter is the fence counter as a token, without drawing one.
local function counter()
  if last and string.match(last, '^%d+$') and #last <= 18 then
    return last
  end
  return '0'
end

-- readToken is a new read grant's token: the counter, or when it has gone (the lock was free
-- longer than its lifetime) the server's clock, written as the counter, as a write's token
-- would be (nextToken). So a read's token is never 0: it is at least the last write's and
-- below the next write's, which a resource that fences reads needs.
local function readToken()
  local c = counter()
  if c ~= '0' then
    return c
  end
  return nextToken(fence, fenceTTL, last, us)
end

local mine, ownerRead, ownerWrite, writer, latest = nil, false, false, nil, nil
for _, m in ipairs(live) do
  if m.op == op then
    mine = m
  elseif owner ~= '' and m.owner == owner then
    if m.mode == 'w' then
      ownerWrite = true
    else
      ownerRead = true
    end
  elseif m.mode == 'w' then
    writer = m
  end
  latest = m
end

local queued = entry ~= '' and redis.call('ZSCORE', queue, entry) ~= false
if mine then
  -- Ours already: an earlier copy of this request ran.
  if queued then
    dequeue(queue, presence, entry)
    waiters = waiters - 1
  end
  local token = counter()
  if mine.mode == 'w' then
    token = currentToken(fence, fenceTTL, last)
  end
  return {1, mine.member, token, waiters, mine.deadline - now, -1}
end

if mode == 'w' and ownerRead and not ownerWrite then
  return {-4, '', '0', waiters, 0, -1}
end

-- grant writes our member and reports it; token is the grant's.
local function grant(token)
  local member = mode .. '|' .. op .. '|' .. beforeStamp .. ms .. afterStamp
  redis.call('ZADD', key, now + ttl, member)
  keepCounter(fence, tonumber(fenceTTL)) -- a new write's token set it; a re-entry's must keep it
  if expired > 0 then
    pruneLeases(key, now)
  end
  leaseExpire(key, now)
  if queued then
    dequeue(queue, presence, entry)
    waiters = waiters - 1
    -- A reader served from the queue passes the turn on to a reader behind it, if that is
    -- now the head: readers admitted by a lease that expired (no release woke them) follow
    -- one another without waiting for their polls.
    if mode == 'r' and waiters > 0 then
      local head = liveHead(queue, presence)
      if head and entryMode(head) == 'r' then
        wake(head, key)
      end
    end
  end
  event(acquiredEvent, ',"value":' .. cjson.encode(member) .. ',"token":' .. token .. ',"waiters":' .. digits(waiters))
  return {1, member, token, waiters, ttl, -1}
end

-- Re-entry by an owner that holds a lease: at once, whoever waits.
if mode == 'r' and (ownerRead or ownerWrite) then
  return grant(readToken())
end
if mode == 'w' and ownerWrite then
  return grant(currentToken(fence, fenceTTL, last))
end

local head = nil
if waiters > 0 then
  head = liveHead(queue, presence)
end
local blocker = nil
if mode == 'w' then
  blocker = latest -- the last lease to run out
  if not blocker and (head == nil or head == entry) then
    return grant(nextToken(fence, fenceTTL, last, us))
  end
else
  blocker = writer
  local writerAhead = false
  if not blocker and head then
    -- Is a live writer waiting ahead of us (anywhere in the queue, when we are not in it)?
    local limit = '+inf'
    if queued then
      limit = '(' .. redis.call('ZSCORE', queue, entry)
    end
    for _, e in ipairs(redis.call('ZRANGEBYSCORE', queue, '-inf', limit)) do
      if entryMode(e) == 'w' and redis.call('ZSCORE', presence, e) then
        writerAhead = true
        break
      end
    end
  end
  if not blocker and not writerAhead then
    return grant(readToken())
  end
  if not blocker then
    blocker = latest -- readers hold it, and a writer waits ahead of us for them
  end
end
-- Not ours yet. A head that may now be admitted is told (a lease it waited for expired).
if head and head ~= entry and not writer and (#live == 0 or entryMode(head) == 'r') then
  wake(head, key)
end

local position = -1
if entry ~= '' then
  waiters = enqueue(queue, presence, entry, now, window, waiters, waitingEvent)
  position = redis.call('ZRANK', queue, entry)
end
local holder, pttl = '', 0
if blocker then
  holder, pttl = blocker.member, blocker.deadline - now
end
return {0, holder, '0', waiters, pttl, position}
