-- The exact sliding-window log of log.lua, taking weighted requests: a
-- request of cost n is allowed when n more entries fit (active + n <=
-- limit), and then logs n entries at now, each under a member of its own;
-- refused, it logs nothing. The caller refuses a cost that can never fit
-- before it gets here.
--
-- KEYS[1]  the user's log: a ZSET of allowed instants (score = ms)
-- ARGV[1]  now in ms, or "" for the server's TIME
-- ARGV[2]  the window in ms
-- ARGV[3]  the limit
-- ARGV[4]  a member unique to this request (its entries add ":1", ":2"...)
-- ARGV[5]  the cost n to add when it fits, "0" only to count
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local now = tonumber(ARGV[1])
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])

redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
local count = redis.call("ZCOUNT", key, "-inf", now)
if cost > 0 and count + cost <= limit then
  for i = 1, cost do
    redis.call("ZADD", key, now, ARGV[4] .. ":" .. i)
  end
  redis.call("PEXPIRE", key, window)
  return {1, limit - count - cost}
end
return {0, math.max(0, limit - count)}
