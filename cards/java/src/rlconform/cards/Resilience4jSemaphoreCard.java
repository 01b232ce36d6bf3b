package rlconform.cards;

import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.SemaphoreBasedRateLimiter;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Resilience4j's SemaphoreBasedRateLimiter: one per user, made at the
 * user's first call, with limitForPeriod N, limitRefreshPeriod W and a
 * timeoutDuration of zero, so that a request never waits; each request is
 * {@code acquirePermission(cost)}, a {@code tryAcquire} on a fair
 * semaphore. Its permits are refreshed by a task the scheduler given to
 * its constructor runs every W from the limiter's creation
 * (SemaphoreBasedRateLimiter.java:102-134): one scheduler thread for every
 * user's limiter, as that constructor lets an application share it (the
 * two-argument constructor makes a thread per limiter). It reads no clock
 * a grader can set: graded in real time. What is left is its metrics'
 * {@code getAvailablePermissions} (the semaphore's permits). It has no call
 * that forgets a limiter: Reset drops the user's limiter from the card's
 * map, and stops its refresh task with the library's {@code shutdown}
 * (SemaphoreBasedRateLimiter.java:266-276).
 */
final class Resilience4jSemaphoreCard implements Limiter {
  private final ScheduledExecutorService scheduler =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "semaphore-refresh");
            t.setDaemon(true);
            return t;
          });
  private final Map<String, SemaphoreBasedRateLimiter> users = new ConcurrentHashMap<>();
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
    return "{\"clock\":false,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  /**
   * As Resilience4jCard's: limiters made later take N and W; those already
   * made take the new N through {@code changeLimitForPeriod}
   * (SemaphoreBasedRateLimiter.java:157-163). The library has no call that
   * changes a limiter's refresh period: a new W drops every limiter, so
   * that all users start afresh under it.
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
    for (SemaphoreBasedRateLimiter l : users.values()) {
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
    SemaphoreBasedRateLimiter l = users.remove(user);
    if (l != null) {
      l.shutdown();
    }
  }

  private SemaphoreBasedRateLimiter limiter(String user) {
    return users.computeIfAbsent(user, u -> new SemaphoreBasedRateLimiter(u, config, scheduler));
  }
}
