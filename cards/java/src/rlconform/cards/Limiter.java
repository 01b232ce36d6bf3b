package rlconform.cards;

/**
 * One library's limiter as protocol v1 asks it: each method is a call of
 * the library, translated. A method throws {@link IllegalArgumentException}
 * for what the library refuses as invalid input (the server answers 400),
 * {@link StoreDown} when its store failed (503), and
 * {@link UnsupportedOperationException} for a call the library has not (404).
 */
interface Limiter {
  /** The capabilities' JSON object. */
  String capabilities();

  /** Sets N per W for every user, at the request's instant ({@link Now}). */
  void configure(long maxRequests, long windowMs);

  /** Whether a request of cost n for user is allowed. */
  boolean allow(String user, long cost);

  /** What is left for user. */
  default long remaining(String user) {
    throw new UnsupportedOperationException("this library has no read of what is left: remaining is not declared");
  }

  /** Forgets user. */
  void reset(String user);

  /** The limiter's store failed: the server answers 503. */
  final class StoreDown extends RuntimeException {
    private static final long serialVersionUID = 1L;

    StoreDown(Throwable cause) {
      super(String.valueOf(cause), cause);
    }
  }
}
