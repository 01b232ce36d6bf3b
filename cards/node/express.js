// express-rate-limit on rate-limit-redis (ioredis), as its README sets it
// up, in front of an Express app that answers 200: CARD_LIMIT requests per
// CARD_WINDOW_MS for each value of the X-User header, the standard headers
// of CARD_DRAFT (draft-6, draft-7 or draft-8) and no legacy X-RateLimit-*
// ones, so that each draft's fields are graded alone. Its keys live under
// RLCONFORM_KEY_PREFIX. With CARD_STORE=memory, no store is given: the
// library's default, its MemoryStore in the process. A request without
// X-User is refused (400) before the limiter: the default key, the
// client's IP, is every user of the grader at once.
"use strict";

const http = require("http");
const express = require("express");
const { rateLimit } = require("express-rate-limit");
const { RedisStore } = require("rate-limit-redis");
const { env, redis, listen } = require("./common");

const e = env();
const draft = process.env.CARD_DRAFT || "draft-8";
if (!["draft-6", "draft-7", "draft-8"].includes(draft)) {
  throw new Error(`CARD_DRAFT=${JSON.stringify(draft)}: want draft-6, draft-7 or draft-8`);
}
const memory = process.env.CARD_STORE === "memory";
if (!memory && (process.env.CARD_STORE || "redis") !== "redis") {
  throw new Error(`CARD_STORE=${JSON.stringify(process.env.CARD_STORE)}: want redis or memory`);
}
const client = memory ? null : redis(e.redisURL);

const app = express();
app.use((req, res, next) => {
  if (!req.get("X-User")) return res.status(400).send("no X-User\n");
  next();
});
app.use(
  rateLimit({
    windowMs: e.windowMs,
    limit: e.limit,
    standardHeaders: draft,
    legacyHeaders: false,
    keyGenerator: (req) => req.get("X-User"),
    store: memory
      ? undefined
      : new RedisStore({
          sendCommand: (...args) => client.call(...args),
          prefix: e.prefix + "erl:",
        }),
  }),
);
app.get("/", (req, res) => res.type("text/plain").send("ok\n"));

listen(http.createServer(app), e.port, client);
