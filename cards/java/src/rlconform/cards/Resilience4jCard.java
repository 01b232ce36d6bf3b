package rlconform.cards;

import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;

/**
 * Resilience4j's AtomicRateLimiter (what {@code RateLimiter.of} and the
 * registry make), one per user ({@link Resilience4jUsers}). Its clock is
 * the nanoTime supplier its constructor takes (AtomicRateLimiter.java:63-76),
 * here the request's instant ({@link Now}): clock control. It keeps its
 * state in memory: no store.
 */
final class Resilience4jCard extends Resilience4jUsers<AtomicRateLimiter> {
  @Override
  public String capabilities() {
    return "{\"clock\":true,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  @Override
  AtomicRateLimiter make(String user, RateLimiterConfig config) {
    return new AtomicRateLimiter(user, config, Now::nanos);
  }
}
