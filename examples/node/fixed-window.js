// The most common limiter on npm, and not a sliding window: a counter per
// user, INCR then PEXPIRE on the first hit, so a window of W opens at a
// user's first request, and denied requests count too (INCR comes before
// the check). rlconform fails it on its boundary-burst specs and names it.
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 PREFIX=fw: CLOCK=off node fixed-window.js
//   rlconform run --exec 'CLOCK=off node fixed-window.js'   (RLCONFORM_REDIS_URL, RLCONFORM_KEY_PREFIX)
//
// Its windows run on Redis's clock (key expiry), so it has no clock
// control: run it with CLOCK=off.
"use strict";

const Redis = require("ioredis");
const { serve } = require("./protocol");

const redis = new Redis(process.env.RLCONFORM_REDIS_URL || process.env.REDIS_URL || "redis://127.0.0.1:6379", {
  commandTimeout: 1000,
  maxRetriesPerRequest: 1,
});
const prefix = process.env.RLCONFORM_KEY_PREFIX || process.env.PREFIX || "fw:";
const keyOf = (userId) => `${prefix}{${userId}}`;

serve(
  {
    async allow(userId, _now, { maxRequests, windowMs }) {
      const count = await redis.incr(keyOf(userId));
      if (count === 1) await redis.pexpire(keyOf(userId), windowMs);
      return { allowed: count <= maxRequests, remaining: Math.max(0, maxRequests - count) };
    },
    async remaining(userId, _now, { maxRequests }) {
      const count = Number((await redis.get(keyOf(userId))) || 0);
      return Math.max(0, maxRequests - count);
    },
    async reset(userId) {
      await redis.del(keyOf(userId));
    },
  },
  () => redis.disconnect(),
);
