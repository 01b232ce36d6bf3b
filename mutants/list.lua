-- A compact sliding log like reference.NewCompact's (a LIST of integer ms,
-- oldest first), with faults switched on by name.
-- KEYS[1] the user's LIST; ARGV: now ms ("" = server TIME), window ms,
-- limit, "1" to record, then a list of faults separated by spaces.
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local faults = " " .. ARGV[5] .. " "
local function fault(name) return string.find(faults, " " .. name .. " ", 1, true) ~= nil end

local cut = now - window
-- list-pop-inclusive: pops only entries older than now-W (s < now-W), so an
-- entry still counts at exactly s+W.
local function left(s)
  if fault("list-pop-inclusive") then return s < cut end
  return s <= cut
end

if fault("list-trim-no-ttl") then
  -- list-trim-no-ttl: the trim rebuilds the log from the entries that
  -- still count (DEL, then RPUSH), which drops the key's TTL; only an
  -- added entry sets it again, so a refused request leaves a key that
  -- never expires.
  local all = redis.call("LRANGE", key, 0, -1)
  local kept = {}
  for i = 1, #all do
    if not left(tonumber(all[i])) then kept[#kept + 1] = all[i] end
  end
  redis.call("DEL", key)
  for i = 1, #kept, 1000 do -- unpack has a bound on its results
    redis.call("RPUSH", key, unpack(kept, i, math.min(i + 999, #kept)))
  end
else
  while true do
    local head = redis.call("LINDEX", key, 0)
    if not head or not left(tonumber(head)) then break end
    redis.call("LPOP", key)
  end
end
local count = redis.call("LLEN", key)

local allowed = 0
if record and count < limit then
  local entry = string.format("%d", now)
  local newest = redis.call("LINDEX", key, -1)
  if newest and tonumber(newest) > now and not fault("list-push-unordered") then
    local later = {}
    repeat
      later[#later + 1] = redis.call("RPOP", key)
      newest = redis.call("LINDEX", key, -1)
    until not newest or tonumber(newest) <= now
    redis.call("RPUSH", key, entry)
    for i = #later, 1, -1 do redis.call("RPUSH", key, later[i]) end
  else
    -- list-push-unordered: the entry goes to the tail even when the
    -- newest is later than now (a clock behind another instance's, a step
    -- back): the log loses its order, and the prune, which stops at the
    -- first entry that still counts, keeps the expired entries behind it.
    redis.call("RPUSH", key, entry)
  end
  redis.call("PEXPIRE", key, math.max(window, tonumber(redis.call("LINDEX", key, -1)) + window - now))
  count = count + 1
  allowed = 1
end

local remaining = limit - count
if remaining < 0 then remaining = 0 end
return {allowed, remaining}
