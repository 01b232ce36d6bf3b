package rlconform.cards;

import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.SemaphoreBasedRateLimiter;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Resilience4j's SemaphoreBasedRateLimiter, one per user
 * ({@link Resilience4jUsers}): each request is a {@code tryAcquire} on a
 * fair semaphore, whose permits a task the scheduler given to its
 * constructor refreshes every W from the limiter's creation
 * (SemaphoreBasedRateLimiter.java:102-134): one scheduler thread for every
 * user's limiter, as that constructor lets an application share it (the
 * two-argument constructor makes a thread per limiter). It reads no clock
 * a grader can set: graded in real time. A dropped limiter's refresh is
 * stopped with the library's {@code shutdown}
 * (SemaphoreBasedRateLimiter.java:266-276).
 */
final class Resilience4jSemaphoreCard extends Resilience4jUsers<SemaphoreBasedRateLimiter> {
  private final ScheduledExecutorService scheduler =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "semaphore-refresh");
            t.setDaemon(true);
            return t;
          });

  @Override
  public String capabilities() {
    return "{\"clock\":false,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  @Override
  SemaphoreBasedRateLimiter make(String user, RateLimiterConfig config) {
    return new SemaphoreBasedRateLimiter(user, config, scheduler);
  }

  @Override
  void drop(SemaphoreBasedRateLimiter limiter) {
    limiter.shutdown();
  }
}
