package rlconform.cards;

/**
 * The instant of the request this thread serves: the X-Rlc-Now-Ms header
 * (protocol v1's clock control), else the wall clock, in milliseconds. A
 * card whose library takes a clock (Guava's SleepingStopwatch, Bucket4j's
 * TimeMeter, Resilience4j's nanoTime supplier) reads it here, in the
 * calling thread, so every decision is made at the instant rlconform gave.
 */
public final class Now {
  private static final ThreadLocal<Long> MILLIS = new ThreadLocal<>();

  private Now() {}

  public static void set(long millis) {
    MILLIS.set(millis);
  }

  /** The request's instant in ms; no instant set is a fault of the card. */
  public static long millis() {
    Long ms = MILLIS.get();
    if (ms == null) {
      throw new IllegalStateException("no instant set for this request");
    }
    return ms;
  }

  public static long micros() {
    return Math.multiplyExact(millis(), 1000L);
  }

  public static long nanos() {
    return Math.multiplyExact(millis(), 1_000_000L);
  }
}
