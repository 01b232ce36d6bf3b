// rate-limiter-flexible's RateLimiterMemory with a window of a year: its
// MemoryStorage deletes a record with setTimeout(durationMs), and Node
// runs a delay above 2^31-1 ms (about 24.8 days) after 1 ms instead
// (printing a TimeoutOverflowWarning): the window is forgotten at once.
// Prints whether the second of two consumes 20 ms apart, limit 1, was
// allowed.
"use strict";
process.removeAllListeners("warning"); // the overflow warning is what is shown, not printed
const { RateLimiterMemory } = require("rate-limiter-flexible");

const lim = new RateLimiterMemory({ points: 1, duration: 365 * 24 * 3600 });
const allowed = (p) => p.then(() => true, () => false);
(async () => {
  const first = await allowed(lim.consume("u"));
  await new Promise((r) => setTimeout(r, 20));
  const second = await allowed(lim.consume("u"));
  console.log(JSON.stringify({ first, second }));
})();
