-- The sliding-window log most teams start from, as blog posts and
-- libraries write it: prune what has left the window, count what is left
-- with ZCARD, add the request when there is room.
--
-- After a clock that stepped back, ZCARD also counts the entries later
-- than now: the conservative reading, which the contract allows.
--
-- KEYS[1]  the user's log: a ZSET of allowed instants (score = ms)
-- ARGV[1]  now in ms, or "" for the server's TIME
-- ARGV[2]  the window in ms
-- ARGV[3]  the limit
-- ARGV[4]  a member unique to this request
-- ARGV[5]  "1" to add the request when allowed, "0" only to count
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local now = tonumber(ARGV[1])
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
local count = redis.call("ZCARD", key)
if ARGV[5] == "1" and count < limit then
  redis.call("ZADD", key, now, ARGV[4])
  redis.call("PEXPIRE", key, window)
  return {1, limit - count - 1}
end
return {0, math.max(0, limit - count)}
