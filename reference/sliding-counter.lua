-- rlconform reference: one decision of the two-window weighted counter
-- (model.SlidingCounter: the rules are in its doc comment).
--
-- KEYS[1]  the user's state: a HASH of a (the grid's anchor: 0 on the
--          epoch, Go's zero time on go-zero), k (the window of c on that grid), p (the count of window
--          k-1) and c (the count of window k)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude sets now)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  limit N (>= 1)
-- ARGV[4]  "1": decide (and count) the request; "0": only look
-- ARGV[5]  "1": denied requests are counted too
-- ARGV[6]  align: epoch, go-zero (the windows of Go's time.Time.Truncate,
--          counted from 0001-01-01 UTC), or first-grid (a grid anchored at
--          the first counted request, forgotten a whole window after the last)
-- ARGV[7]  admit: below (the estimate is below N), or at-most (the
--          estimate including this request is at most N)
-- ARGV[8]  the request's cost n (>= 0; absent: 1, a unit request): all or
--          nothing, counted n times when allowed (and, with ARGV[5], when
--          refused: INCRBY n before the check). n > N is refused. n = 0
--          counts and writes nothing and is allowed (as the model answers;
--          the answer is not graded). The caller never sends a negative n.
--
-- Exact: a request of cost n is allowed when p*(W-e) + (c+n-1)*W < N*W
-- (below: the estimate + n - 1 < N), or p*(W-e) + (c+n)*W <= N*W
-- (at-most: the estimate + n <= N), e = now-a-kW; n = 1 is the unit
-- request's rule. The caller keeps N*W <= 2^52 and the script n <= N, so when the
-- left side is at most N*W every term is a whole number below 2^53, exact
-- in a double; when it is not, rounding (monotone) keeps it above N*W: the
-- answer is still right.
--
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local record = ARGV[4] == "1"
local countDenied = ARGV[5] == "1"
local atMost = ARGV[7] == "at-most"
local cost = tonumber(ARGV[8] or "1")
if cost == 0 then
  return {1, 0} -- consumes and writes nothing: allowed
end

local st = redis.call("HMGET", key, "k", "p", "c", "a")
local a = 0
if ARGV[6] == "go-zero" then
  a = -62135596800000 -- 0001-01-01 UTC in unix ms: now - a is exact below 2^53
elseif ARGV[6] == "first-grid" then
  if st[1] and now >= tonumber(st[4]) and now < tonumber(st[4]) + (tonumber(st[1]) + 2) * window then
    a = tonumber(st[4])
  else
    a, st = now, {} -- a new grid, anchored here
  end
end
local k = math.floor((now - a) / window)
local prev, cur = 0, 0
if st[1] then
  local sk = tonumber(st[1])
  if k == sk then
    prev, cur = tonumber(st[2]), tonumber(st[3])
  elseif k == sk + 1 then
    prev = tonumber(st[3])
  end
end

local e = now - a - k * window
local used = prev * (window - e) + cur * window
local cap = limit * window
local allowed, remaining = 0, 0
if cost > limit then
  -- never fits: refused (and the sums below stay exact)
elseif atMost then
  if used + cost * window <= cap then
    allowed = 1
    -- floor(room / W) more requests fit, this one included
    remaining = math.floor((cap - used) / window)
  end
elseif used + (cost - 1) * window < cap then
  allowed = 1
  -- ceil(room / W) more requests fit
  remaining = math.floor((cap - used + window - 1) / window)
end
if record and (allowed == 1 or countDenied) then
  redis.call("HSET", key, "a", a, "k", k, "p", prev, "c", cur + cost)
  -- A count matters until the end of the window after its own.
  -- The TTL is the state's life plus one window: the script reads a state
  -- past its life as a fresh one, so the window is only slack, for a "now"
  -- that runs ahead of the server's clock (a given clock) not to forget a
  -- state that still matters.
  redis.call("PEXPIRE", key, math.max(0, a + (k + 2) * window - now) + window)
end
return {allowed, remaining}
