// A sliding-window rate limiter in Node.js that speaks rlconform's HTTP
// control protocol v1, so that `rlconform run --target URL` can grade it.
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 PREFIX=rl: node server.js
//   rlconform run --exec 'node server.js' --instances 2
//
// Under --exec it reads RLCONFORM_REDIS_URL and RLCONFORM_KEY_PREFIX, which
// take precedence over REDIS_URL and PREFIX.
// CLOCK=off declares no clock control (graded in real time). It prints
// "listening on http://127.0.0.1:PORT" once it accepts requests.
"use strict";

const fs = require("fs");
const path = require("path");
const Redis = require("ioredis");
const { serve } = require("./protocol");

const redis = new Redis(process.env.RLCONFORM_REDIS_URL || process.env.REDIS_URL || "redis://127.0.0.1:6379", {
  commandTimeout: 1000, // fail a decision rather than hang on a dead Redis
  maxRetriesPerRequest: 1,
});
redis.defineCommand("slide", {
  numberOfKeys: 1,
  lua: fs.readFileSync(path.join(__dirname, "sliding.lua"), "utf8"),
});

const prefix = process.env.RLCONFORM_KEY_PREFIX || process.env.PREFIX || "rl:";
// The user id goes in a hash tag: one key per user, cluster-safe.
const keyOf = (userId) => `${prefix}{${userId}}`;

serve(
  {
    async allow(userId, now, { maxRequests, windowMs }) {
      const [allowed, remaining] = await redis.slide(keyOf(userId), now ?? "", windowMs, maxRequests, "allow");
      return { allowed: allowed === 1, remaining };
    },
    async remaining(userId, now, { maxRequests, windowMs }) {
      const [, remaining] = await redis.slide(keyOf(userId), now ?? "", windowMs, maxRequests, "peek");
      return remaining;
    },
    async reset(userId) {
      await redis.del(keyOf(userId));
    },
  },
  () => redis.disconnect(),
);
