-- rlconform reference: one decision of a fixed-window counter
-- (model.FixedWindow: the rules are in its doc comment).
--
-- KEYS[1]  the user's state: a HASH of a (first-grid anchor), s (start of
--          the window of the last counted request; elastic: its last
--          renewal) and c (its count)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude sets now)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  limit N (>= 1)
-- ARGV[4]  "1": decide (and count) the request; "0": only look
-- ARGV[5]  align: epoch | go-zero | first-grid | first-hit | first-second
--          | elastic | elastic-allowed (go-zero: the windows of Go's
--          time.Time.Truncate, counted from 0001-01-01 UTC; first-second: a
--          window opened at now truncated to the second, the model's phase
--          0; elastic: as first-hit, every request renews the window's
--          expiry, W from now; elastic-allowed: every allowed one does)
-- ARGV[6]  "1": denied requests are counted too
-- ARGV[7]  query: read | write (a look saves the state, without counting)
-- ARGV[8]  the request's cost n (>= 0; absent: 1, a unit request): all or
--          nothing, allowed when count + n <= N, and then counted n times
--          (INCRBY n); refused, it counts n with ARGV[6] (INCRBY n before
--          the check), nothing otherwise. n > N is refused. n = 0 counts
--          nothing and is allowed (as the model answers; the answer is not
--          graded): with query write it is the query, and saves as a look
--          does; else it writes nothing. The caller never sends a negative n.
--
-- Every number stays a whole number below 2^53 (ms instants, W, counts),
-- so Lua's doubles hold them exactly.
--
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local align = ARGV[5]
local countDenied = ARGV[6] == "1"
local writes = ARGV[7] == "write"
local cost = tonumber(ARGV[8] or "1")
if cost == 0 then
  if not writes then
    return {1, 0} -- consumes and writes nothing: allowed
  end
  record = false -- query=write: a request of no cost is the query, which saves
end

-- The state of the window holding now, as the stored one and W say (a
-- window the stored state is not of starts at zero).
local st = redis.call("HMGET", key, "a", "s", "c")
local exists = st[2] ~= false
local anchor = tonumber(st[1] or "0")
local start = tonumber(st[2] or "0")
local count = tonumber(st[3] or "0")
if align == "epoch" or align == "go-zero" then
  -- Go's zero time, 0001-01-01 UTC, in unix ms: now - origin stays below
  -- 2^53 (until the year 285,000), exact in a double.
  local origin = 0
  if align == "go-zero" then
    origin = -62135596800000
  end
  local s = origin + math.floor((now - origin) / window) * window
  if not exists or start ~= s then
    anchor, start, count = 0, s, 0
  end
elseif align == "first-hit" or align == "first-second" or align == "elastic" or align == "elastic-allowed" then
  if not exists or now >= start + window or now < start then
    anchor, start, count = 0, now, 0
    if align == "first-second" then
      start = now - now % 1000
    end
  end
else -- first-grid: forgotten a whole window after the last counted one
  if not exists or now >= start + 2 * window or now < anchor then
    anchor, start, count = now, now, 0
  else
    local s = anchor + math.floor((now - anchor) / window) * window
    if s ~= start then
      start, count = s, 0
    end
  end
end

local allowed = 0
if count + cost <= limit or cost == 0 then
  allowed = 1
end
local remaining = limit - count
if remaining < 0 then
  remaining = 0
end
local counts = record and (allowed == 1 or countDenied)
-- elastic: the request renews the window's expiry (elastic-allowed: an
-- allowed one); a window with no count has none to renew.
local renews = record and (align == "elastic" or (align == "elastic-allowed" and allowed == 1))
if counts or (writes and not record) or (renews and count > 0) then
  -- A unit request's INCR is written as it always was: mutants/ plants a
  -- fault at that line.
  if counts and cost == 1 then
    count = count + 1
  elseif counts then
    count = count + cost
  end
  if renews then
    start = now -- the window now ends W from this request
  end
  redis.call("HSET", key, "a", anchor, "s", start, "c", count)
  -- The count matters until its window ends (first-grid: the anchor a
  -- window more).
  local life = start + window - now
  if align == "first-grid" then
    life = life + window
  end
  -- The TTL is the state's life plus one window: the script reads a state
  -- past its life as a fresh one, so the window is only slack, for a "now"
  -- that runs ahead of the server's clock (a given clock) not to forget a
  -- state that still matters.
  redis.call("PEXPIRE", key, math.max(0, life) + window)
end
return {allowed, remaining}
