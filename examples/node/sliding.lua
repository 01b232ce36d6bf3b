-- Sliding-window log for the Node.js example limiter.
-- KEYS[1]: the user's ZSET of allowed instants (ms)
-- ARGV[1]: now (ms)   ARGV[2]: window (ms)   ARGV[3]: limit
-- ARGV[4]: "allow" to decide and record, "peek" to count only
-- Returns {allowed (0/1), remaining}.
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

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
