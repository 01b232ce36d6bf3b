-- rlconform reference: one decision of GCRA (model.GCRA: the rules are in
-- its doc comment), exact.
--
-- KEYS[1]  the user's state: a HASH of the theoretical arrival time
--          TAT = q + r/d ms, a whole part q and a reduced fraction r/d
--          (0 <= r < d)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude sets now)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  limit N (>= 1): the emission interval is T = W/N
-- ARGV[4]  burst B (>= 1)
-- ARGV[5]  "1": decide (and record) the request; "0": only look
-- ARGV[6]  cost: "whole" (all or nothing) or "debt" (as a unit request)
-- ARGV[7]  the request's cost n (>= 0; absent: 1, a unit request): n
--          emission intervals, TAT' = max(TAT, now) + n*T. whole: allowed
--          when TAT' - now <= B*T (n = 1: max(TAT, now) - now <= (B-1)*T,
--          the unit rule), so n > B is refused; debt: allowed when
--          max(TAT, now) - now <= (B-1)*T, the unit rule, whatever n (the
--          user may then owe more than a burst). Allowed, TAT' is stored;
--          refused, nothing is. n = 0 writes nothing and is allowed (as
--          the model answers; the answer is not graded). The caller never
--          sends a negative n, nor under debt one with n*W above 2^52.
--
-- Arithmetic: in units of 1/L ms, L = lcm(d, N), every quantity is a whole
-- number. The caller keeps B*W <= 2^52 and N <= 2^52; the script keeps
-- B*W*(L/N) <= 2^52, so (B-1)*T and everything compared with it is exact
-- in a double. When a TAT written under another N would need a larger L,
-- its fraction is rounded up to 1/N (a TAT later by under 1/N ms: never
-- more admitted); with a fixed N, d divides N and that never happens.
--
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local record = ARGV[5] == "1"
local debt = ARGV[6] == "debt"
local cost = tonumber(ARGV[7] or "1")
if cost == 0 then
  return {1, 0} -- consumes and writes nothing: allowed
end
local BIG = 4503599627370496 -- 2^52

local function gcd(a, b)
  while b ~= 0 do
    a, b = b, a % b
  end
  return a
end

-- from = max(TAT, now)
local fq, fr, fd = now, 0, 1
local st = redis.call("HMGET", key, "q", "r", "d")
if st[1] then
  local q, r, d = tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
  if q > now or (q == now and r > 0) then
    fq, fr, fd = q, r, d
  end
end

local L = fd / gcd(fd, limit) * limit
if L > BIG or burst * window * (L / limit) > BIG then
  fr = math.ceil(fr / fd * limit)
  fd, L = limit, limit
  if fr >= limit then
    fq, fr = fq + 1, 0
  end
end

-- slack = (B-1)*T - (from - now) - (n-1)*T, in units of 1/L: allowed
-- when >= 0 (debt: without the (n-1)*T). With n <= B, (n-1)*T <= (B-1)*T:
-- exact. Under debt a TAT far ahead makes used more than 2^53, rounded,
-- but still above tol (at most 2^52): the comparison holds.
local used = (fq - now) * L + fr * (L / fd)
local tol = (burst - 1) * window * (L / limit)
local per = window * (L / limit) -- T in units of 1/L
local allowed, remaining = 0, 0
local need = (cost - 1) * per
if debt then
  need = 0
end
if (debt or cost <= burst) and used + need <= tol then
  allowed = 1
  remaining = math.floor((tol - used) / per) + 1
end

if record and allowed == 1 then
  -- TAT = from + n*T: n*W/N ms, its whole part wq and the rest in 1/L
  -- (n*W <= B*W <= 2^52, or under debt n*W <= 2^52 by the caller: exact)
  local nw = cost * window
  local wq = math.floor(nw / limit)
  local nr = fr * (L / fd) + (nw - wq * limit) * (L / limit)
  local nq = fq + wq
  if nr >= L then
    nq, nr = nq + 1, nr - L
  end
  local g = gcd(nr, L)
  redis.call("HSET", key, "q", nq, "r", nr / g, "d", L / g)
  -- The state matters until TAT, rounded up to the ms.
  local life = nq - now
  if nr > 0 then
    life = life + 1
  end
  -- The TTL is the state's life plus one window: the script reads a state
  -- past its life as a fresh one, so the window is only slack, for a "now"
  -- that runs ahead of the server's clock (a given clock) not to forget a
  -- state that still matters.
  redis.call("PEXPIRE", key, math.max(0, life) + window)
end
return {allowed, remaining}
