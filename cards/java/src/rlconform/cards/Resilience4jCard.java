package rlconform.cards;

import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Resilience4j's AtomicRateLimiter (what {@code RateLimiter.of} and the
 * registry make): one per user, made at the user's first request (as a
 * per-key registry makes it), with limitForPeriod N, limitRefreshPeriod W
 * and a timeoutDuration of zero, so that a request never waits; each
 * request is {@code acquirePermission(cost)}. Its clock is the nanoTime
 * supplier its constructor takes (AtomicRateLimiter.java:63-76), here the
 * request's instant ({@link Now}): clock control. It keeps its state in
 * memory: no store. What is left is its metrics'
 * {@code getAvailablePermissions}. It has no call that forgets a limiter:
 * Reset drops the user's limiter from the card's map.
 */
final class Resilience4jCard implements Limiter {
  private final Map<String, RateLimiter> users = new ConcurrentHashMap<>();
  private volatile RateLimiterConfig config = config(5, 1000);

  private static RateLimiterConfig config(int n, long w) {
    return RateLimiterConfig.custom()
        .limitForPeriod(n)
        .limitRefreshPeriod(Duration.ofMillis(w))
        .timeoutDuration(Duration.ZERO)
        .build();
  }

  @Override
  public String capabilities() {
    return "{\"clock\":true,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  /**
   * The limit is an int (a larger one is a 400). Limiters made later take
   * N and W; those already made take the new N through
   * {@code changeLimitForPeriod} (AtomicRateLimiter.java:103-111). The
   * library has no call that changes a limiter's refresh period: a new W
   * drops every limiter, so that all users start afresh under it, never
   * some under the old W and some under the new one.
   */
  @Override
  public void configure(long n, long w) {
    int limit = Server.javaInt(n, "max_requests");
    if (config.getLimitRefreshPeriod().toMillis() != w) {
      users.clear();
    }
    config = config(limit, w);
    for (RateLimiter l : users.values()) {
      l.changeLimitForPeriod(limit);
    }
  }

  /** acquirePermission(cost), as given (a cost beyond an int is a 400). */
  @Override
  public boolean allow(String user, long cost) {
    int n = Server.javaInt(cost, "cost");
    return limiter(user).acquirePermission(n);
  }

  @Override
  public long remaining(String user) {
    return limiter(user).getMetrics().getAvailablePermissions();
  }

  @Override
  public void reset(String user) {
    users.remove(user);
  }

  private RateLimiter limiter(String user) {
    return users.computeIfAbsent(user, u -> new AtomicRateLimiter(u, config, Now::nanos));
  }
}
