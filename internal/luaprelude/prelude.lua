-- rlconform's Lua prelude, put before every script of the reference and
-- mutant limiters (package luaprelude). It sets
--   now  the decision's instant in unix ms: ARGV[1], or the server's TIME
--        when ARGV[1] is "" (one clock for every instance, whatever their
--        own clocks say).
local now
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
