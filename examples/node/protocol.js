// The HTTP side of rlconform's control protocol v1, shared by the example
// limiters: it validates requests and calls a limiter's four operations.
//
//   serve({ allow, remaining, reset }) // each async, given (userId, nowMs or null, config)
//
// CLOCK=off in the environment declares no clock control: the grader then
// grades in real time, and "now" is always this machine's clock.
"use strict";

const http = require("http");

// The protocol's bounds: a limit up to 2^53-1 (exact in JavaScript and
// Lua), a window up to 100 years of 365 days.
const MAX_WINDOW_MS = 100 * 365 * 24 * 3600 * 1000;

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

function serve(limiter, onClose) {
  const clock = process.env.CLOCK !== "off";
  let config = { maxRequests: 5, windowMs: 60000 };

  // "now" is the grader's clock when it has control of ours; else null, and
  // the limiter reads its store's clock: instances that read their own
  // clocks decide out of order and can let N+1 through.
  const now = (req) => {
    const header = req.headers["x-rlc-now-ms"];
    return clock && header !== undefined ? Number(header) : null;
  };

  async function handle(req, res) {
    if (req.method === "GET" && req.url === "/rlc/v1/capabilities") {
      return send(res, 200, { clock, configure: true, remaining: true, reset: true });
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
    switch (req.url) {
      case "/rlc/v1/allow": {
        const { allowed, remaining } = await limiter.allow(userId, now(req), config);
        return send(res, 200, { allowed, remaining });
      }
      case "/rlc/v1/remaining":
        return send(res, 200, { remaining: await limiter.remaining(userId, now(req), config) });
      case "/rlc/v1/reset":
        await limiter.reset(userId);
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
      onClose();
    });
  }
}

module.exports = { serve };
