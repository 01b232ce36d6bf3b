-- A fixed window aligned to the epoch, as libraries write it: INCR the
-- counter of the current window (denied requests count too), and on the
-- window's first hit PEXPIRE it by the window.
--
-- KEYS[1]  the user's counter for the current window
-- ARGV[1]  the limit
-- ARGV[2]  the window in ms: the counter's TTL, set on its first hit
-- ARGV[3]  "1" to count the request, "0" only to look
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
if ARGV[3] ~= "1" then
  local count = tonumber(redis.call("GET", key) or "0")
  return {0, math.max(0, limit - count)}
end
local count = redis.call("INCR", key)
if count == 1 then
  redis.call("PEXPIRE", key, ARGV[2])
end
if count <= limit then
  return {1, limit - count}
end
return {0, 0}
