-- Compare-and-delete of a multi-key lock's keys at once (protocol.LuaLibrary is prepended):
-- KEYS[1..n] the keys (ARGV[2] = n), then, when ARGV[3] is '1', each key's wait queue and
-- presence (KEYS[n+2i-1], KEYS[n+2i]); ARGV[1] the value they share (docs/value-format.md
-- "Multi-key locks"). All or nothing: when any key holds another value (or is no string),
-- nothing is deleted; keys already gone are passed over. Each key deleted wakes its first live
-- waiter, as release.lua does.
--
-- Returns {status, current}: 'match' (deleted), 'other' (current: the index of the first key
-- holding something else, a newline, and its value or type), 'gone' (no key holds it).
local n = tonumber(ARGV[2])
local held = {}
for i = 1, n do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind == 'string' then
    local value = redis.call('GET', KEYS[i])
    if value ~= ARGV[1] then
      return {'other', i .. '\n' .. value}
    end
    held[#held + 1] = i
  elseif kind ~= 'none' then
    return {'other', i .. '\n' .. kind}
  end
end
if #held == 0 then
  return {'gone', ''}
end
for _, i in ipairs(held) do
  redis.call('DEL', KEYS[i])
  if ARGV[3] == '1' then
    pcall(wakeLiveHead, KEYS[i], KEYS[n + 2 * i - 1], KEYS[n + 2 * i])
  end
end
return {'match', ARGV[1]}
