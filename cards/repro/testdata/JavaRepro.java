// Calls the Java cards' libraries directly, without rlconform and without
// the cards' server, and prints what they answered as one JSON object
// (cards/repro java_test.go runs it with java's source launcher on the
// class path scripts/ensure-cards-java resolves). Each case's clock is a
// variable the case moves; nothing waits.
import io.github.bucket4j.Bucket;
import io.github.bucket4j.TimeMeter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import io.github.resilience4j.ratelimiter.internal.SemaphoreBasedRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

public class JavaRepro {
  static long nanos; // every case's clock

  public static void main(String[] args) {
    String out =
        switch (args[0]) {
          case "resilience4j-negative-cost" -> resilience4jNegativeCost();
          case "resilience4j-raised-limit" -> resilience4jRaisedLimit();
          case "bucket4j-overflow" -> bucket4jOverflow();
          case "resilience4j-semaphore-lowered" -> resilience4jSemaphoreLowered();
          default -> throw new IllegalArgumentException("no case " + args[0]);
        };
    System.out.println(out);
  }

  /**
   * Resilience4j with 3 permits per minute and no wait: spend 3, then a
   * request of 1 (refused), of -2, and three of 1.
   */
  static String resilience4jNegativeCost() {
    RateLimiterConfig c = config(3, Duration.ofMinutes(1));
    AtomicRateLimiter l = new AtomicRateLimiter("u", c, () -> nanos);
    List<Boolean> got = new ArrayList<>();
    for (int n : new int[] {1, 1, 1, 1, -2, 1, 1, 1}) {
      got.add(l.acquirePermission(n));
    }
    return "{\"allowed\":" + got + ",\"available\":" + l.getMetrics().getAvailablePermissions() + "}";
  }

  /**
   * Resilience4j with 2 permits per minute and no wait: spend 2, raise the
   * limit to 5 (changeLimitForPeriod), ask again in the same minute and in
   * the next.
   */
  static String resilience4jRaisedLimit() {
    RateLimiterConfig c = config(2, Duration.ofMinutes(1));
    nanos = 0;
    AtomicRateLimiter l = new AtomicRateLimiter("u", c, () -> nanos);
    l.acquirePermission(2);
    l.changeLimitForPeriod(5);
    boolean sameMinute = l.acquirePermission(1);
    nanos = Duration.ofMinutes(1).toNanos();
    int nextMinute = l.getMetrics().getAvailablePermissions();
    return "{\"same_minute\":" + sameMinute + ",\"next_minute\":" + nextMinute + "}";
  }

  /**
   * Bucket4j, capacity N = 10000 refilled greedily N per W, emptied at 0;
   * at W/2 + W/2N (5000.5 tokens due) one token is taken; at W/2 + W/N
   * (5000 due) it is asked what is left. For W of a day and of 30 days.
   */
  static String bucket4jOverflow() {
    return "{\"day\":" + spendAndAsk(Duration.ofDays(1)) + ",\"days30\":" + spendAndAsk(Duration.ofDays(30)) + "}";
  }

  static long spendAndAsk(Duration w) {
    long n = 10_000;
    TimeMeter clock =
        new TimeMeter() {
          @Override
          public long currentTimeNanos() {
            return nanos;
          }

          @Override
          public boolean isWallClockBased() {
            return false;
          }
        };
    nanos = 0;
    Bucket b = Bucket.builder()
        .addLimit(limit -> limit.capacity(n).refillGreedy(n, w))
        .withCustomTimePrecision(clock)
        .build();
    if (!b.tryConsume(n)) {
      throw new IllegalStateException("a full bucket refused its capacity");
    }
    long half = w.toNanos() / 2, step = w.toNanos() / (2 * n);
    nanos = half + step;
    if (!b.tryConsume(1)) {
      throw new IllegalStateException("5000.5 tokens refused 1");
    }
    nanos = half + 2 * step;
    return b.getAvailableTokens();
  }

  /** A scheduler that keeps the task scheduled at a fixed rate, for the case to run. */
  static final class Captured extends ScheduledThreadPoolExecutor {
    Runnable task;

    Captured() {
      super(1);
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable r, long initial, long period, TimeUnit unit) {
      task = r;
      return super.schedule(() -> {}, 1, TimeUnit.DAYS);
    }
  }

  /**
   * Resilience4j's SemaphoreBasedRateLimiter, 6 permits per second, none
   * spent, its limit lowered to 2; then its refresh task, run as its
   * scheduler would at the period's end.
   */
  static String resilience4jSemaphoreLowered() {
    Captured ex = new Captured();
    RateLimiterConfig c = config(6, Duration.ofSeconds(1));
    SemaphoreBasedRateLimiter l = new SemaphoreBasedRateLimiter("u", c, ex);
    l.changeLimitForPeriod(2);
    String thrown = "";
    try {
      ex.task.run();
    } catch (RuntimeException e) {
      thrown = e.getClass().getName();
    }
    int available = l.getMetrics().getAvailablePermissions();
    ex.shutdownNow();
    return "{\"refresh_threw\":\"" + thrown + "\",\"available\":" + available + "}";
  }

  /** Resilience4j's configuration of n permits per period, never waiting. */
  static RateLimiterConfig config(int n, Duration period) {
    return RateLimiterConfig.custom()
        .limitForPeriod(n)
        .limitRefreshPeriod(period)
        .timeoutDuration(Duration.ZERO)
        .build();
  }
}
