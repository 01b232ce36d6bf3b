-- A fixed window kept as a key whose TTL is the window, opened by the
-- user's first request, as rate-limiter-flexible's RateLimiterRedis writes
-- it: SET the key to 0 with the window as its TTL unless it exists, then
-- INCRBY the cost (a refused request counts too, a cost of 0 opens the
-- window all the same).
--
-- KEYS[1]  the user's counter
-- ARGV[1]  the cost, 0 or more
-- ARGV[2]  the window in ms
-- Returns the count, this request's cost included.
redis.call("SET", KEYS[1], 0, "PX", ARGV[2], "NX")
return redis.call("INCRBY", KEYS[1], ARGV[1])
