// A sliding-window rate limiter in Node.js that speaks rlconform's HTTP
// control protocol v1, so that `rlconform run --target URL` can grade it.
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 PREFIX=rl: node server.js
//
// It prints "listening on http://127.0.0.1:PORT" once it accepts requests.
"use strict";

const fs = require("fs");
const http = require("http");
const path = require("path");
const Redis = require("ioredis");

const redis = new Redis(process.env.REDIS_URL || "redis://127.0.0.1:6379", {
  commandTimeout: 1000, // fail a decision rather than hang on a dead Redis
  maxRetriesPerRequest: 1,
});
redis.defineCommand("slide", {
  numberOfKeys: 1,
  lua: fs.readFileSync(path.join(__dirname, "sliding.lua"), "utf8"),
});

const prefix = process.env.PREFIX || "rl:";
let config = { maxRequests: 5, windowMs: 60000 };

// The user id goes in a hash tag: one key per user, cluster-safe.
const keyOf = (userId) => `${prefix}{${userId}}`;

// "now" is the grader's clock when it sends one, else ours.
function now(req) {
  const header = req.headers["x-rlc-now-ms"];
  return header === undefined ? Date.now() : Number(header);
}

function send(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

function readJSON(req) {
  return new Promise((resolve, reject) => {
    let data = "";
    req.on("data", (chunk) => (data += chunk));
    req.on("end", () => {
      try {
        resolve(JSON.parse(data));
      } catch (e) {
        reject(e);
      }
    });
  });
}

async function handle(req, res) {
  if (req.method === "GET" && req.url === "/rlc/v1/capabilities") {
    return send(res, 200, { clock: true, configure: true, remaining: true, reset: true });
  }
  if (req.method !== "POST") return send(res, 404, { error: "not found" });

  let body;
  try {
    body = await readJSON(req);
  } catch (e) {
    return send(res, 400, { error: "malformed JSON: " + e.message });
  }

  if (req.url === "/rlc/v1/configure") {
    const n = body.max_requests, w = body.window_ms;
    // The protocol's bounds: a limit up to 2^53-1 (exact in JavaScript and
    // Lua), a window up to 100 years of 365 days.
    const MAX_WINDOW_MS = 100 * 365 * 24 * 3600 * 1000;
    if (!Number.isSafeInteger(n) || n < 1 || !Number.isSafeInteger(w) || w < 1 || w > MAX_WINDOW_MS) {
      return send(res, 400, { error: "max_requests must be an integer from 1 to 2^53-1, window_ms one from 1 to " + MAX_WINDOW_MS });
    }
    config = { maxRequests: n, windowMs: w };
    return send(res, 204);
  }

  const userId = body.user_id;
  if (typeof userId !== "string" || userId === "") {
    return send(res, 400, { error: "user_id must be a non-empty string" });
  }
  const { maxRequests, windowMs } = config;
  switch (req.url) {
    case "/rlc/v1/allow": {
      const [allowed, remaining] = await redis.slide(keyOf(userId), now(req), windowMs, maxRequests, "allow");
      return send(res, 200, { allowed: allowed === 1, remaining });
    }
    case "/rlc/v1/remaining": {
      const [, remaining] = await redis.slide(keyOf(userId), now(req), windowMs, maxRequests, "peek");
      return send(res, 200, { remaining });
    }
    case "/rlc/v1/reset":
      await redis.del(keyOf(userId));
      return send(res, 204);
  }
  return send(res, 404, { error: "not found" });
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => send(res, 503, { error: "store failure: " + err.message }));
});

server.listen(Number(process.env.PORT || 8080), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    server.close();
    redis.disconnect();
  });
}
