-- Fixed-window counters: the classic "sliding" limiter that is not one.
-- KEYS[1] the user's key prefix; ARGV: now ms ("" = server TIME), window ms, limit, "1" to
-- record, and the kind:
--   epoch  windows aligned to the epoch: [kW, (k+1)W)
--   first  a window opens at the user's first request and lasts W
--   approx the two-window estimate prev*(1-elapsed/W) + current
-- Returns {allowed 0|1, remaining}.
local base = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local kind = ARGV[5]

local count, key
if kind == "first" then
  key = base
  local startedAt = tonumber(redis.call("HGET", key, "start") or "-1")
  if startedAt >= 0 and now < startedAt + window then
    count = tonumber(redis.call("HGET", key, "count"))
  elseif record then
    -- Only a request opens a window; a query of what remains opens none.
    redis.call("DEL", key)
    redis.call("HSET", key, "start", now, "count", 0)
    redis.call("PEXPIRE", key, window)
    count = 0
  else
    count = 0
  end
elseif kind == "approx" then
  local k = math.floor(now / window)
  key = base .. ":" .. k
  local prev = tonumber(redis.call("GET", base .. ":" .. (k - 1)) or "0")
  local cur = tonumber(redis.call("GET", key) or "0")
  local elapsed = (now - k * window) / window
  count = math.floor(prev * (1 - elapsed) + cur)
else
  key = base .. ":" .. math.floor(now / window)
  count = tonumber(redis.call("GET", key) or "0")
end

local allowed = 0
if record and count < limit then
  allowed = 1
  count = count + 1
  if kind == "first" then
    redis.call("HINCRBY", key, "count", 1)
  else
    redis.call("INCR", key)
    redis.call("PEXPIRE", key, 2 * window)
  end
end
local remaining = limit - count
if remaining < 0 then remaining = 0 end
return {allowed, remaining}
