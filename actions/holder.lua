-- Prelude shared by release.lua and extend.lua (Go prepends it to each): decides, atomically
-- with the action that follows, whether KEYS[1] still holds exactly the value the operator saw.
--
-- ARGV[1]  the expected value as a string (a string lock's raw value, or the canonical form
--          of a hash lock, see actions/hashform.go)
-- ARGV[2]  extend.lua: the new TTL in milliseconds; release.lua ignores it
-- ARGV[3]  n: the number of field/value pairs of an expected hash (0 when ARGV[1] is not
--          a canonical hash form); ARGV[4..3+2n] those pairs
-- ARGV[4+2n] extend.lua: 'true' when it may shorten the key's TTL
--
-- holder() returns a status and the key's current content:
--   'match', value   the key holds exactly the expected value
--   'other', value   it holds something else (string value, or HGETALL's flat array)
--   'gone',  ''      the key does not exist
--   'type',  name    the key is not a string or a hash: not a lock, never touched
local function holder(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    return 'gone', ''
  end
  if kind == 'string' then
    local value = redis.call('GET', key)
    if value == ARGV[1] then
      return 'match', value
    end
    return 'other', value
  end
  if kind == 'hash' then
    local npairs = tonumber(ARGV[3])
    local all = redis.call('HGETALL', key)
    -- Same field count and every expected field with its value: the hashes are equal.
    if npairs > 0 and #all == 2 * npairs then
      for i = 0, npairs - 1 do
        if redis.call('HGET', key, ARGV[4 + 2 * i]) ~= ARGV[5 + 2 * i] then
          return 'other', all
        end
      end
      return 'match', all
    end
    return 'other', all
  end
  return 'type', kind
end
