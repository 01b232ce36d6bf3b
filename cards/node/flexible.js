// rate-limiter-flexible's RateLimiterRedis (ioredis), or with
// CARD_STORE=memory its RateLimiterMemory, over rlconform's protocol v1, a
// thin shim: every decision, key and TTL is the library's.
//
//   allow      consume(user, cost)   resolved: allowed; rejected with a
//                                    RateLimiterRes: denied; with an Error: 503
//   remaining  get(user)             remainingPoints (the limit when null)
//   reset      delete(user)
//   configure  a new RateLimiterRedis({points: N, duration: W/1000}) on the
//              same client and keyPrefix, as a service that changes its
//              limit makes one (the keys written under the old one stay)
//
// A cost goes to consume as given, 0 and negative ones too (what the
// library does with them is what the cost specs grade); the window as the
// library takes it, in seconds, a fraction too. No clock control: the
// library reads none of ours (its windows are Redis TTLs). Started by
// rlconform run --exec with PORT, RLCONFORM_REDIS_URL, RLCONFORM_KEY_PREFIX.
"use strict";

const http = require("http");
const { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } = require("rate-limiter-flexible");
const { env, redis, listen } = require("./common");

const MAX_WINDOW_MS = 100 * 365 * 24 * 3600 * 1000; // the protocol's bound
const MAX_BODY = 1 << 16;

const e = env();
// CARD_STORE=memory: RateLimiterMemory, the counts in this process (one
// instance, graded as one --target); else RateLimiterRedis.
const memory = process.env.CARD_STORE === "memory";
if (!memory && (process.env.CARD_STORE || "redis") !== "redis") {
  throw new Error(`CARD_STORE=${JSON.stringify(process.env.CARD_STORE)}: want redis or memory`);
}
const client = memory ? null : redis(e.redisURL);

function limiter(points, windowMs) {
  if (memory) {
    return new RateLimiterMemory({ keyPrefix: e.prefix + "rlflx", points, duration: windowMs / 1000 });
  }
  return new RateLimiterRedis({
    storeClient: client,
    keyPrefix: e.prefix + "rlflx",
    points,
    duration: windowMs / 1000,
    // Fail at once while Redis is down (the library's own option), rather
    // than queue the command until it is back.
    rejectIfRedisNotReady: true,
  });
}

let current = limiter(e.limit, e.windowMs);

function send(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

function readJSON(req) {
  return new Promise((resolve, reject) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      data += chunk;
      if (data.length > MAX_BODY) reject(new Error("body too long"));
    });
    req.on("end", () => {
      try {
        resolve(JSON.parse(data));
      } catch (err) {
        reject(err);
      }
    });
    req.on("error", reject);
  });
}

// storeFailure is a 503 error: the library could not reach its store.
class StoreFailure extends Error {}

async function allow(user, cost) {
  try {
    await current.consume(user, cost);
    return true;
  } catch (err) {
    if (err instanceof RateLimiterRes) return false;
    throw new StoreFailure(err.message);
  }
}

async function call(op) {
  try {
    return await op();
  } catch (err) {
    throw new StoreFailure(err.message);
  }
}

async function handle(req, res) {
  if (req.method === "GET" && req.url === "/rlc/v1/capabilities") {
    return send(res, 200, { clock: false, configure: true, remaining: true, reset: true, cost: true });
  }
  if (req.method !== "POST") return send(res, 404, { error: "not found" });
  let body;
  try {
    body = await readJSON(req);
  } catch (err) {
    return send(res, 400, { error: "malformed JSON: " + err.message });
  }
  if (body === null || typeof body !== "object") return send(res, 400, { error: "want a JSON object" });
  if (req.url === "/rlc/v1/configure") {
    const n = body.max_requests, w = body.window_ms;
    if (!Number.isSafeInteger(n) || n < 1 || !Number.isSafeInteger(w) || w < 1 || w > MAX_WINDOW_MS) {
      return send(res, 400, { error: `max_requests must be an integer from 1 to 2^53-1, window_ms one from 1 to ${MAX_WINDOW_MS}` });
    }
    current = limiter(n, w);
    return send(res, 204);
  }
  const user = body.user_id;
  if (typeof user !== "string" || user === "") return send(res, 400, { error: "user_id must be a non-empty string" });
  switch (req.url) {
    case "/rlc/v1/allow": {
      const cost = body.cost === undefined ? 1 : body.cost;
      if (!Number.isSafeInteger(cost)) return send(res, 400, { error: "cost must be an integer" });
      return send(res, 200, { allowed: await allow(user, cost) });
    }
    case "/rlc/v1/remaining": {
      const lim = current;
      const r = await call(() => lim.get(user));
      return send(res, 200, { remaining: r === null ? lim.points : r.remainingPoints });
    }
    case "/rlc/v1/reset":
      await call(() => current.delete(user));
      return send(res, 204);
  }
  return send(res, 404, { error: "not found" });
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (err instanceof StoreFailure) return send(res, 503, { error: "store failure: " + err.message });
    send(res, 500, { error: err.message });
  });
});
// Serve once Redis answers: the library refuses every call until then.
if (memory) listen(server, e.port, null);
else client.once("ready", () => listen(server, e.port, client));
