-- rlconform mutants: GCRA as many libraries write it, in float64 seconds:
-- the emission interval T = (W/1000)/N s, the theoretical arrival time
-- TAT a float of seconds since the epoch, now = ms/1000. Each step rounds:
-- at the instant the exact model allows a request on its edge, the floats
-- may land a hair above it (or below where it denies).
--
-- KEYS[1]  the user's TAT (a STRING, seconds)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude sets now)
-- ARGV[2]  window W in ms; ARGV[3] limit N; ARGV[4] burst B
-- ARGV[5]  "1": decide (and record) the request; "0": only look
--
-- Returns {allowed 0|1, remaining}.
local key = KEYS[1]
now = now / 1000 -- the prelude's ms, as float seconds
local period = tonumber(ARGV[2]) / 1000
local limit = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local record = ARGV[5] == "1"

local interval = period / limit
local tol = (burst - 1) * interval
local tat = tonumber(redis.call("GET", key) or "0")
if tat < now then
  tat = now
end
local allowed, remaining = 0, 0
if tat - now <= tol then
  allowed = 1
  remaining = math.floor((tol - (tat - now)) / interval) + 1
end
if record and allowed == 1 then
  tat = tat + interval
  local ttl = math.ceil((tat - now) * 1000) + tonumber(ARGV[2])
  redis.call("SET", key, string.format("%.17g", tat), "PX", ttl)
end
return {allowed, remaining}
