-- rlconform reference: one decision of a token bucket (model.TokenBucket:
-- the rules are in its doc comment), exact.
--
-- KEYS[1]  the user's bucket: a HASH of n/d tokens (a reduced fraction),
--          l (continuous, second: the last refill; interval: the anchor) and, with
--          expire=idle, x (when it is forgotten)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude sets now)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  refill N tokens per W (>= 1)
-- ARGV[4]  capacity C (>= 1)
-- ARGV[5]  "1": decide (and spend a token on) the request; "0": only look
-- ARGV[6]  refill: continuous | interval | second (N*1000/W tokens at
--          each whole second of the epoch the clock crosses)
-- ARGV[7]  expire: full (forgotten when full again) | idle (W*ceil(C/N)
--          after the last write; an interval bucket keeps its grid)
-- ARGV[8]  query: read | write (a look saves the bucket as a request does)
-- ARGV[9]  the request's cost n (>= 0; absent: 1, a unit request): n
--          tokens, all or nothing: allowed when n tokens are in the bucket,
--          and then spent; refused, nothing is written. n > C is refused.
--          n = 0 spends nothing and is allowed (as the model answers; the
--          answer is not graded): with query write it is the query, and
--          saves as a look does; else it writes nothing. The caller never
--          sends a negative n.
--
-- Arithmetic: tokens are counted in units of 1/L, L = lcm(d, W), where a
-- continuous refill of N/W per ms is a whole number N*(L/W) per ms. The
-- caller keeps C*W <= 2^52 and N <= 2^52; the script keeps C*L and
-- N*(L/W) <= 2^52, so every compared quantity is exact in a double. When
-- tokens written under another W would need a larger L, they are rounded
-- down to 1/W (never more admitted); with a fixed W, d divides W and that
-- never happens. Interval refills keep whole tokens (d = 1). A second's
-- refill is N*1000*(L/W) units, kept <= 2^52 the same way.
--
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local record = ARGV[5] == "1"
local interval = ARGV[6] == "interval"
local second = ARGV[6] == "second"
local idle = ARGV[7] == "idle"
local writes = ARGV[8] == "write"
local cost = tonumber(ARGV[9] or "1")
if cost == 0 then
  if not writes then
    return {1, 0} -- consumes and writes nothing: allowed
  end
  record = false -- query=write: a request of no cost is the query, which saves
end
local BIG = 4503599627370496 -- 2^52

local function gcd(a, b)
  while b ~= 0 do
    a, b = b, a % b
  end
  return a
end

local st = redis.call("HMGET", key, "n", "d", "l", "x")
if idle and st[1] and now >= tonumber(st[4]) then
  st = {} -- forgotten: its life ran out (the key's TTL has slack)
end
local L, tok, last
if interval then
  L = 1
  if not st[1] then
    tok, last = cap, now -- a new, full bucket
  else
    tok, last = tonumber(st[1]), tonumber(st[3])
    if tok > cap then
      tok = cap -- a capacity lowered since: the excess is gone
    end
    local k = math.floor((now - last) / window) -- whole W since the anchor
    if k >= 1 then
      local missing = cap - tok
      if idle then
        tok, last = math.min(cap, tok + k * rate), last + k * window -- its grid kept
      elseif missing <= 0 or k >= math.ceil(missing / rate) then
        tok, last = cap, now -- full again: forgotten, a new bucket
      else
        tok, last = tok + k * rate, last + k * window
      end
    end
  end
else
  if not st[1] then
    L = window
    tok, last = cap * L, now
  else
    local n, d = tonumber(st[1]), tonumber(st[2])
    last = tonumber(st[3])
    L = d / gcd(d, window) * window
    if L > BIG or cap * L > BIG or rate * (L / window) * 1000 > BIG then
      n = math.floor(n / d * window)
      d, L = window, window
    end
    tok = n * (L / d)
    if tok > cap * L then
      tok = cap * L -- a capacity lowered since: the excess is gone
    end
    if second then
      local k = math.floor(now / 1000) - math.floor(last / 1000)
      if k >= 1 then
        local full = cap * L
        tok, last = math.min(full, tok + k * rate * (L / window) * 1000), now
      end
    elseif now > last then
      local per = rate * (L / window) -- tokens per ms, in units of 1/L
      local full = cap * L
      if tok >= full then
        tok = full
      else
        local missing = full - tok
        if now - last >= math.ceil(missing / per) then
          tok = full
        else
          tok = tok + (now - last) * per
        end
      end
      last = now
    end
  end
end

-- n <= C keeps n*L <= C*L <= 2^52: exact.
local allowed, remaining = 0, math.floor(tok / L)
if (cost <= cap and tok >= cost * L) or cost == 0 then
  allowed = 1
end
if (record and allowed == 1) or (writes and not record) then
  if record then
    tok = tok - cost * L
  end
  local g = gcd(tok, L)
  local life
  if idle then
    -- Forgotten a whole bucket's refill after this write.
    life = math.ceil(cap / rate) * window
    redis.call("HSET", key, "n", tok / g, "d", L / g, "l", last, "x", now + life)
  else
    redis.call("HSET", key, "n", tok / g, "d", L / g, "l", last)
    -- The bucket matters until it is full again.
    if interval then
      life = last + math.ceil((cap - tok) / rate) * window - now
    elseif second then
      local per = rate * (L / window) * 1000 -- tokens per second, in units of 1/L
      life = (math.floor(last / 1000) + math.max(1, math.ceil((cap * L - tok) / per))) * 1000 - now
    else
      life = last + math.ceil((cap * L - tok) / (rate * (L / window))) - now
    end
  end
  -- The TTL is the state's life plus one window: the script reads a state
  -- past its life as a fresh one, so the window is only slack, for a "now"
  -- that runs ahead of the server's clock (a given clock) not to forget a
  -- state that still matters.
  redis.call("PEXPIRE", key, math.max(0, life) + window)
end
return {allowed, remaining}
