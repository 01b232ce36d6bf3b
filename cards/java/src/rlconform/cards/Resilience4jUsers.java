package rlconform.cards;

import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the Resilience4j cards share: a limiter per user, made at the
 * user's first call (as a per-key registry makes it), with limitForPeriod
 * N, limitRefreshPeriod W and a timeoutDuration of zero, so that a request
 * never waits; each request is {@code acquirePermission(cost)}, what is
 * left its metrics' {@code getAvailablePermissions}. Resilience4j has no
 * call that forgets a limiter: Reset drops the user's from the card's map
 * ({@link #drop} then frees what it holds).
 */
abstract class Resilience4jUsers<L extends RateLimiter> implements Limiter {
  private final Map<String, L> users = new ConcurrentHashMap<>();
  private volatile RateLimiterConfig config = config(5, 1000);

  static RateLimiterConfig config(int n, long w) {
    return RateLimiterConfig.custom()
        .limitForPeriod(n)
        .limitRefreshPeriod(Duration.ofMillis(w))
        .timeoutDuration(Duration.ZERO)
        .build();
  }

  /** A new limiter of user, on config. */
  abstract L make(String user, RateLimiterConfig config);

  /** Frees what a dropped limiter holds (nothing, by default). */
  void drop(L limiter) {}

  /**
   * The limit is an int (a larger one is a 400). Limiters made later take
   * N and W; those already made take the new N through the library's
   * {@code changeLimitForPeriod}. The library has no call that changes a
   * limiter's refresh period: a new W drops every limiter, so that all
   * users start afresh under it, never some under the old W and some under
   * the new one.
   */
  @Override
  public void configure(long n, long w) {
    int limit = Server.javaInt(n, "max_requests");
    if (config.getLimitRefreshPeriod().toMillis() != w) {
      for (String u : users.keySet()) {
        reset(u);
      }
    }
    config = config(limit, w);
    for (L l : users.values()) {
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
    L l = users.remove(user);
    if (l != null) {
      drop(l);
    }
  }

  private L limiter(String user) {
    return users.computeIfAbsent(user, u -> make(u, config));
  }
}
