-- A sliding-window log like the reference's, with faults switched on by name.
-- KEYS[1] the user's ZSET; ARGV: now ms ("" = server TIME), window ms, limit,
-- "1" to record, then a list of faults separated by spaces.
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local faults = " " .. ARGV[5] .. " "
local function fault(name) return string.find(faults, " " .. name .. " ", 1, true) ~= nil end


-- clock-clamped: a clock that stepped back is held at the newest entry, so
-- requests are logged later than they were made.
if fault("clock-clamped") then
  local newest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  if newest[2] ~= nil and tonumber(newest[2]) > now then now = tonumber(newest[2]) end
end

-- remaining-truncated-start: remaining counts from the window's start
-- truncated to whole seconds (ZCOUNT key int(now - W) now), as a moving
-- window kept in seconds does; its decisions are exact. It prunes nothing,
-- so that the older entries of that second are there to count.
local truncated = fault("remaining-truncated-start")

-- inclusive-boundary: keeps an entry at exactly now-W, so it counts at s+W.
local cut = now - window
if fault("inclusive-boundary") then cut = "(" .. cut end
if (record or not fault("remaining-no-prune")) and not truncated then
  redis.call("ZREMRANGEBYSCORE", key, "-inf", cut)
end
-- An entry later than now (the clock stepped back) does not count.
local function active()
  if truncated then return redis.call("ZCOUNT", key, "(" .. (now - window), now) end
  return redis.call("ZCOUNT", key, "-inf", now)
end
local count = active()
if truncated and not record then
  count = redis.call("ZCOUNT", key, math.floor((now - window) / 1000) * 1000, now)
end

local limitCheck = limit
-- off-by-one: count <= limit admits N+1.
if fault("off-by-one") then limitCheck = limit + 1 end
-- under-admits: count < limit-1 denies the Nth request.
if fault("under-admits") then limitCheck = limit - 1 end

local allowed = 0
if record then
  local member = string.format("%d", now)
  -- same-ms-collision: the member is the timestamp alone.
  if not fault("same-ms-collision") then
    local same = redis.call("ZCOUNT", key, now, now)
    if same > 0 then member = member .. "-" .. same end
  end
  if count < limitCheck then
    allowed = 1
  end
  -- log-denied: every request is logged, allowed or not.
  if allowed == 1 or fault("log-denied") then
    -- drops-future: entries later than now are lost when one is added.
    if fault("drops-future") then redis.call("ZREMRANGEBYSCORE", key, "(" .. now, "+inf") end
    redis.call("ZADD", key, now, member)
    -- no-ttl: never sets an expiry.
    if fault("ttl-oldest-entry") then
      -- ttl-oldest-entry: the key lives until the oldest entry leaves (the
      -- time until more quota), not the newest.
      local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
      redis.call("PEXPIRE", key, math.max(1, tonumber(oldest[2]) + window - now))
    elseif truncated then
      redis.call("PEXPIRE", key, window + 1000)
    elseif not fault("no-ttl") then
      redis.call("PEXPIRE", key, window)
    end
    count = active()
  end
end

local remaining = limit - count
-- remaining-no-clamp: a lowered limit makes remaining negative.
if remaining < 0 and not fault("remaining-no-clamp") then remaining = 0 end
return {allowed, remaining}
