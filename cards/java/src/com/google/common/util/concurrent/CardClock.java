package com.google.common.util.concurrent;

import rlconform.cards.Now;

/**
 * The instant rlconform's protocol v1 gives each request (X-Rlc-Now-Ms), as
 * a Guava {@code RateLimiter.SleepingStopwatch}: the stopwatch every
 * RateLimiter reads "now" from (RateLimiter.java:416, under its mutex, in
 * the calling thread; lines of Guava 33.8.0). The class is package-private
 * in Guava, and so is {@code RateLimiter.create(double, SleepingStopwatch)}
 * (RateLimiter.java:137-140, {@code @VisibleForTesting}): this class is
 * compiled into Guava's package on the card's class path, which the JVM
 * allows for a jar that is not sealed (Guava's jar is not, and on the
 * class path its module descriptor is ignored). Nothing else of Guava is touched:
 * every decision is {@code RateLimiter.tryAcquire}'s.
 */
public final class CardClock extends RateLimiter.SleepingStopwatch {
  private static final CardClock INSTANCE = new CardClock();

  private CardClock() {}

  /** RateLimiter.create(permitsPerSecond) on this clock: a SmoothBursty. */
  public static RateLimiter bursty(double permitsPerSecond) {
    return RateLimiter.create(permitsPerSecond, INSTANCE);
  }

  @Override
  protected long readMicros() {
    return Now.micros();
  }

  /**
   * tryAcquire with no timeout never waits (its wait is the old next free
   * ticket, already past: RateLimiter.java:416-422, :436-437): nothing to
   * sleep on a clock that only moves when rlconform moves it.
   */
  @Override
  protected void sleepMicrosUninterruptibly(long micros) {}
}
