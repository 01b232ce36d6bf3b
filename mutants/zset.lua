-- A sliding-window log like the reference's, with faults switched on by name.
-- KEYS[1] the user's ZSET; ARGV: now ms ("" = server TIME), window ms, limit,
-- "1" to record, a list of faults separated by spaces, then the request's
-- cost n (absent or "": 1, a unit request; a weighted request of AllowRequestN
-- otherwise). A cost is all or nothing, as the reference's: allowed when
-- active + n <= N, and then n entries at now, each under a member of its own;
-- refused, nothing is logged; n = 0 logs nothing and is allowed while one more
-- fits. The caller sends a negative n only under cost-negative-refunds.
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local faults = " " .. ARGV[5] .. " "
local function fault(name) return string.find(faults, " " .. name .. " ", 1, true) ~= nil end
local weighted = ARGV[6] ~= nil and ARGV[6] ~= ""
local cost = 1
if weighted then cost = tonumber(ARGV[6]) end
-- cost-zero-consumes: a request of cost 0 logs one entry (max(n, 1)).
if fault("cost-zero-consumes") and cost == 0 then cost = 1 end


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

-- add logs k entries at score, named score, score-1, ..., as the reference
-- names them: the entries of one score are pruned together, so the ones
-- already there are mostly score, score-1 .. score-(same-1); a name taken
-- (a refund removed others) adds nothing, and the next names are tried.
-- One ZADD per 1000 entries at most: unpack's stack is bounded.
local function add(score, k)
  local base = string.format("%d", score)
  -- same-ms-collision: the member is the timestamp alone.
  if fault("same-ms-collision") then
    redis.call("ZADD", key, score, base)
    return
  end
  local i = redis.call("ZCOUNT", key, score, score)
  while k > 0 do
    local args = {}
    for j = i, i + math.min(k, 1000) - 1 do
      args[#args + 1] = score
      args[#args + 1] = j == 0 and base or base .. "-" .. j
    end
    i = i + #args / 2
    k = k - redis.call("ZADD", key, unpack(args))
  end
end

-- logs writes n entries at now, as the faults say.
local function logs(n)
  if fault("cost-one-member") then
    -- cost-one-member: the n entries are one ZADD of one member: one kept.
    add(now, 1)
  elseif fault("cost-spread-scores") then
    -- cost-spread-scores: the entries are made unique by their scores
    -- (now, now-1, ..., now-(n-1)): all but one leave before s+W.
    for j = 0, n - 1 do add(now - j, 1) end
  else
    add(now, n)
  end
end

-- cost-negative-refunds: a negative cost removes |n| of the oldest
-- entries, a refund, and is allowed.
if record and cost < 0 then
  redis.call("ZPOPMIN", key, -cost)
  count = active()
  return {1, math.max(0, limit - count)}
end

-- decide returns whether the request is allowed and how many entries it
-- logs.
local function decide()
  if cost == 0 then
    return count < limitCheck, 0
  end
  if fault("cost-partial") then
    -- cost-partial: the part that fits is logged, allowed when any is.
    local fits = math.max(0, math.min(cost, limitCheck - count))
    return fits > 0, fits
  end
  local need = cost
  -- cost-check-one: room for one more is checked, then n are logged.
  if fault("cost-check-one") then need = 1 end
  if count + need <= limitCheck then return true, cost end
  -- log-denied: every request is logged, allowed or not.
  -- cost-refused-consumes: a refused weighted request logs its n entries.
  if fault("log-denied") or (weighted and fault("cost-refused-consumes")) then return false, cost end
  return false, 0
end

local allowed = 0
if record then
  local ok, n = decide()
  if ok then allowed = 1 end
  -- Beyond N entries at one instant change no answer under the limit in
  -- force (they leave together): a faulty script logs at most N.
  n = math.min(n, limit)
  if n > 0 then
    -- drops-future: entries later than now are lost when one is added.
    if fault("drops-future") then redis.call("ZREMRANGEBYSCORE", key, "(" .. now, "+inf") end
    logs(n)
    -- no-ttl: never sets an expiry.
    if fault("ttl-oldest-entry") then
      -- ttl-oldest-entry: the key lives until the oldest entry leaves (the
      -- time until more quota), not the newest.
      local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
      redis.call("PEXPIRE", key, math.max(1, tonumber(oldest[2]) + window - now))
    elseif truncated then
      redis.call("PEXPIRE", key, window + 1000)
    elseif fault("ttl-a-day") then
      -- ttl-a-day: keys live a day whatever the window.
      redis.call("PEXPIRE", key, 86400000)
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
