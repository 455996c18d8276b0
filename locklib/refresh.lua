-- Owner-checked extension of one Lock on KEYS[1] to at least ARGV[3] ms; it never shortens the
-- key, so renewals that run in any order, or twice, leave it at the latest expiry any of them
-- asked for (protocol/lib.lua, extendTo). KEYS: lock, levels[, fence counter: extended with
-- the lock; Redlock has none]. ARGV: value (base for a re-entrant
-- lock), op ('' for a plain lock: its level in the levels set otherwise), ttl ms, renewed
-- event[, '1': write the lock even when nothing is extended (WithReplicas: the WAIT that
-- follows on this connection counts replicas up to this connection's last write, which must
-- come after the lock's)]. Returns the PTTL now (-1: no expiry), or -3 when the Lock does not
-- hold the key.
local key, levels, fence, op = KEYS[1], KEYS[2], KEYS[3], ARGV[2]
local cur = redis.call('GET', key)
if not holds(cur, ARGV[1], levels, op) then
  return -3
end
if op == '' then
  levels = nil
end
local pttl = extendTo(key, levels, fence, tonumber(ARGV[3]))
if ARGV[5] == '1' and pttl > 0 then
  redis.call('SET', key, cur, 'KEEPTTL') -- the same value and expiry: a write, nothing more
end
event(ARGV[4], ',"ttl_ms":' .. pttl)
return pttl
