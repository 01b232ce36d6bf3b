package rlconform.cards;

import com.google.common.util.concurrent.CardClock;
import com.google.common.util.concurrent.RateLimiter;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Guava's RateLimiter: one {@code RateLimiter.create(N / W seconds)} per
 * user (a SmoothBursty, made at the user's first request, as a per-key
 * cache of limiters makes it), each request {@code tryAcquire(cost)}.
 * "Now" is the request's instant, through {@link CardClock} (clock
 * control). Guava keeps its state in memory: no store. It has no read of
 * what is left (remaining is not declared) and no call that forgets a
 * limiter: Reset drops the user's limiter from the card's map, as
 * x/time/rate's card does.
 */
final class GuavaCard implements Limiter {
  private final Map<String, RateLimiter> users = new ConcurrentHashMap<>();
  private volatile double permitsPerSecond = 5.0; // 5 per second until configured

  @Override
  public String capabilities() {
    return "{\"clock\":true,\"configure\":true,\"remaining\":false,\"reset\":true,\"cost\":true}";
  }

  /**
   * Configure sets N / W permits per second on every user's limiter
   * (RateLimiter.setRate, at the request's instant), and on those made
   * later.
   */
  @Override
  public void configure(long n, long w) {
    double rate = n * 1000.0 / w;
    permitsPerSecond = rate;
    for (RateLimiter l : users.values()) {
      l.setRate(rate);
    }
  }

  /**
   * A request of cost n is tryAcquire(n), as given: Guava throws
   * IllegalArgumentException for n of 0 or less (RateLimiter.java:495-496),
   * invalid input (400). A cost beyond a Java int cannot be asked.
   */
  @Override
  public boolean allow(String user, long cost) {
    int n = Server.javaInt(cost, "cost");
    RateLimiter l = users.computeIfAbsent(user, u -> CardClock.bursty(permitsPerSecond));
    return l.tryAcquire(n);
  }

  @Override
  public void reset(String user) {
    users.remove(user);
  }
}
