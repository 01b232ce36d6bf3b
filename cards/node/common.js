// What the Node.js cards share: their environment (what rlconform run
// --exec and the cards' endpoints give: PORT, RLCONFORM_REDIS_URL,
// RLCONFORM_KEY_PREFIX; CARD_LIMIT and CARD_WINDOW_MS for an endpoint's
// policy), a Redis client, and serving on 127.0.0.1:$PORT until SIGTERM.
"use strict";

const Redis = require("ioredis");

// positive is the environment's whole number name, at least 1, or def.
function positive(name, def) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new Error(`${name}=${JSON.stringify(raw)}: want a whole number of at least 1`);
  }
  return n;
}

// env is the card's environment, validated.
function env() {
  const port = positive("PORT", 0);
  if (port === 0 || port > 65535) throw new Error("PORT is not set (1 to 65535)");
  return {
    port,
    redisURL: process.env.RLCONFORM_REDIS_URL,
    prefix: process.env.RLCONFORM_KEY_PREFIX || "",
    limit: positive("CARD_LIMIT", 5),
    windowMs: positive("CARD_WINDOW_MS", 1000),
  };
}

// redis is an ioredis client that fails a command within a second while
// Redis is down (the card then answers 503) and reconnects when it is back.
// It retries nothing, as the Go cards' client (MaxRetries -1): with
// maxRetriesPerRequest 0 the first lost connection fails every command
// still waiting (ioredis 5.9.2 built/redis/event_handler.js:198-209,
// built/Redis.js:672-692), so none is sent again on the next connection
// (autoResendUnfulfilledCommands, event_handler.js:280-289), where a
// command Redis ran before the connection dropped would be counted twice.
// A library's own retry stays its own (rate-limit-redis runs its
// increment once more after any error, dist/index.cjs:129-149).
function redis(url) {
  if (!url) throw new Error("RLCONFORM_REDIS_URL is not set: this card keeps its state in Redis");
  const client = new Redis(url, { commandTimeout: 1000, maxRetriesPerRequest: 0 });
  client.on("error", () => {}); // reconnects by itself; each command reports its own failure
  return client;
}

// listen serves server on 127.0.0.1:port, and closes it and client (when
// there is one) on SIGTERM or SIGINT.
function listen(server, port, client) {
  server.keepAliveTimeout = 60000;
  server.listen(port, "127.0.0.1");
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      server.close();
      if (client) client.disconnect();
      process.exit(0);
    });
  }
}

module.exports = { env, redis, listen };
