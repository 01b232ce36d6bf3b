-- rlconform reference: one decision of an exact sliding-window log.
--
-- KEYS[1]  the user's log: a ZSET of allowed instants (score = ms)
-- ARGV[1]  now in unix ms, or "" to read the server's TIME (the prelude:
--          one clock for every app instance, whatever their own clocks say)
-- ARGV[2]  window W in ms (>= 1)
-- ARGV[3]  limit N (>= 1)
-- ARGV[4]  "1": decide and log the request if allowed; "0": only look
-- ARGV[5]  "1": also say when more quota comes (one more lookup)
-- ARGV[6]  the request's cost n (>= 0; absent: 1, a unit request): all or
--          nothing, allowed when count + n <= N, and then n entries are
--          logged at now. n = 0 logs and writes nothing and is allowed
--          (as the model answers; the answer is not graded). n > N is refused.
--          The caller never sends a negative n. n entries are ZADDs of up
--          to 1000 members, O(n log N) in all, and n <= N on that path.
--
-- Returns {allowed 0|1, remaining, retry_after_ms, reset_ms}: reset is
-- how long until the oldest entry that counts leaves (more quota then; 0
-- with none, or when not asked).
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[6] or "1")
if cost == 0 then
  return {1, 0, 0, 0} -- consumes and writes nothing: allowed
end

-- An entry s counts while now-W < s <= now: it stops at exactly s+W.
-- Entries after now (left by a clock that stepped back) stay in the log but
-- do not count.
redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
local count = redis.call("ZCOUNT", key, "-inf", now)

local allowed = 0
if ARGV[4] == "1" and count + cost <= limit then
  -- Members must be unique or same-millisecond requests collapse into one.
  -- All entries of one score are pruned together, so the k already at `now`
  -- are named now, now-1 .. now-(k-1), and "now-k" .. "now-(k+n-1)" are
  -- new. Short members keep an entry at a few bytes.
  local member = string.format("%d", now)
  local same = redis.call("ZCOUNT", key, now, now)
  if cost == 1 then
    if same > 0 then
      member = member .. "-" .. same
    end
    redis.call("ZADD", key, now, member)
  else
    -- One ZADD per 1000 entries at most: unpack's stack is bounded.
    local args = {}
    for i = same, same + cost - 1 do
      args[#args + 1] = now
      args[#args + 1] = i == 0 and member or member .. "-" .. i
      if #args == 2000 or i == same + cost - 1 then
        redis.call("ZADD", key, unpack(args))
        args = {}
      end
    end
  end
  -- The newest entry lives W more; so does the key.
  redis.call("PEXPIRE", key, window)
  count = count + cost
  allowed = 1
end

local retry = 0
if count >= limit then
  -- The next request is allowed once count-limit+1 entries have left.
  local nth = redis.call("ZRANGE", key, count - limit, count - limit, "WITHSCORES")
  retry = tonumber(nth[2]) + window - now
end
local reset = 0
if ARGV[5] == "1" and count > 0 then
  local oldest = redis.call("ZRANGEBYSCORE", key, "-inf", now, "WITHSCORES", "LIMIT", 0, 1)
  reset = tonumber(oldest[2]) + window - now
end
local remaining = limit - count
if remaining < 0 then
  remaining = 0
end
return {allowed, remaining, retry, reset}
