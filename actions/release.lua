-- Compare-and-delete (holder.lua is prepended): deletes KEYS[1] only when it still holds the
-- expected value. The fence counter is left alone: tokens must keep growing.
local status, current = holder(KEYS[1])
if status == 'match' then
  redis.call('DEL', KEYS[1])
end
return {status, current}
