// @nestjs/throttler's own storage (ThrottlerStorageService) called as its
// ThrottlerGuard calls it (throttler.guard.js:125: increment(key, ttl,
// limit, blockDuration, name), blockDuration defaulting to the ttl, :93),
// on a clock moved by hand (Date.now, which the storage reads): 10 per
// 10 s, a request every second from 0 to 9 s, then at 9.5, 10.5, 19.4 and
// 19.6 s. Prints, per blockDuration, each request's instant and answer.
"use strict";

const { ThrottlerStorageService } = require("@nestjs/throttler");

const start = 1767225600000;
let now = start;
Date.now = () => now;

async function run(blockDuration) {
  const storage = new ThrottlerStorageService();
  const answers = [];
  for (const ms of [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9500, 10500, 19400, 19600]) {
    now = start + ms;
    const r = await storage.increment("user", 10000, 10, blockDuration, "default");
    answers.push(`${ms}:${r.isBlocked ? "denied" : "allowed"}`);
  }
  storage.onApplicationShutdown();
  return answers.join(" ");
}

(async () => {
  console.log(`ttl ${await run(10000)}`);
  console.log(`0 ${await run(0)}`);
})();
