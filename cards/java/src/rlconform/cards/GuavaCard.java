package rlconform.cards;

import com.google.common.util.concurrent.CardClock;
import com.google.common.util.concurrent.RateLimiter;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;

/**
 * Guava's RateLimiter (Debian's libguava-java) over rlconform's protocol
 * v1 on 127.0.0.1:$PORT, served by the JDK's com.sun.net.httpserver: one
 * {@code RateLimiter.create(N / W seconds)} per user (a SmoothBursty, made
 * at the user's first request, as a per-key cache of limiters makes it),
 * each request {@code tryAcquire(cost)}. Every decision is Guava's; the
 * shim only translates calls, and reads "now" from X-Rlc-Now-Ms through
 * {@link CardClock} (clock control). Guava keeps its state in memory: no
 * store. It has no read of what is left (remaining is not declared) and
 * no call that forgets a limiter: Reset drops the user's limiter from the
 * card's map, as x/time/rate's card does.
 */
public final class GuavaCard {
  static final long MAX_LIMIT = (1L << 53) - 1;
  static final long MAX_WINDOW_MS = 3_153_600_000_000L;

  private final Map<String, RateLimiter> users = new ConcurrentHashMap<>();
  private volatile double permitsPerSecond = 5.0; // 5 per second until configured

  public static void main(String[] args) throws IOException {
    int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
    GuavaCard card = new GuavaCard();
    // A backlog of 128: rlconform's bursts open many connections at once.
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
    server.createContext("/", card::handle);
    server.setExecutor(Executors.newFixedThreadPool(32));
    server.start();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      Answer a;
      try {
        a = route(ex);
      } catch (IllegalArgumentException e) {
        a = Answer.error(400, e.getMessage());
      } catch (RuntimeException e) {
        a = Answer.error(500, e.toString());
      }
      ex.getResponseHeaders().set("Content-Type", "application/json");
      byte[] body = a.body.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(a.status, body.length == 0 ? -1 : body.length);
      if (body.length > 0) {
        try (OutputStream out = ex.getResponseBody()) {
          out.write(body);
        }
      }
    }
  }

  private Answer route(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    String method = ex.getRequestMethod();
    byte[] raw = readBody(ex.getRequestBody());
    if (method.equals("GET") && path.equals("/rlc/v1/capabilities")) {
      return new Answer(200, "{\"clock\":true,\"configure\":true,\"remaining\":false,\"reset\":true,\"cost\":true}");
    }
    if (!method.equals("POST")) {
      return Answer.error(404, "no such endpoint");
    }
    setClock(ex.getRequestHeaders().getFirst("X-Rlc-Now-Ms"));
    Map<String, Object> in = Json.object(utf8(raw));
    switch (path) {
      case "/rlc/v1/configure":
        return configure(in);
      case "/rlc/v1/allow":
        return allow(user(in), in);
      case "/rlc/v1/reset":
        users.remove(user(in));
        return new Answer(204, "");
      default:
        return Answer.error(404, "no such endpoint (Guava's RateLimiter has no read of what is left: remaining is not declared)");
    }
  }

  /** Sets this thread's instant: the header's, else the wall clock's. */
  private static void setClock(String header) {
    if (header == null) {
      CardClock.set(System.currentTimeMillis() * 1000);
      return;
    }
    try {
      CardClock.set(Math.multiplyExact(Long.parseLong(header.trim()), 1000L));
    } catch (ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException("X-Rlc-Now-Ms: " + header + " is not unix milliseconds");
    }
  }

  /**
   * Configure sets N / W permits per second on every user's limiter
   * (RateLimiter.setRate, at the request's instant), and on those made
   * later.
   */
  private Answer configure(Map<String, Object> in) {
    long n = integer(in, "max_requests", MAX_LIMIT, "max_requests");
    long w = integer(in, "window_ms", MAX_WINDOW_MS, "window_ms");
    double rate = n * 1000.0 / w;
    permitsPerSecond = rate;
    for (RateLimiter l : users.values()) {
      l.setRate(rate);
    }
    return new Answer(204, "");
  }

  /**
   * A request of cost n is tryAcquire(n), as given: Guava throws
   * IllegalArgumentException for n of 0 or less (RateLimiter.java:493-495),
   * invalid input (400). A cost beyond a Java int cannot be asked.
   */
  private Answer allow(String user, Map<String, Object> in) {
    long cost = 1;
    if (in.containsKey("cost")) {
      Object c = in.get("cost");
      if (!(c instanceof BigInteger b) || b.bitLength() > 31) {
        throw new IllegalArgumentException("invalid request cost: not a Java int: " + c);
      }
      cost = b.longValue();
    }
    RateLimiter l = users.computeIfAbsent(user, u -> CardClock.bursty(permitsPerSecond));
    boolean ok = l.tryAcquire((int) cost);
    return new Answer(200, "{\"allowed\":" + ok + "}");
  }

  private static String user(Map<String, Object> in) {
    Object u = in.get("user_id");
    if (!(u instanceof String s) || s.isEmpty()) {
      throw new IllegalArgumentException("invalid user id: want a non-empty string");
    }
    return s;
  }

  /** The integer member name of in, from 1 to max. */
  private static long integer(Map<String, Object> in, String name, long max, String what) {
    Object v = in.get(name);
    if (!(v instanceof BigInteger b) || b.signum() < 1 || b.compareTo(BigInteger.valueOf(max)) > 0) {
      throw new IllegalArgumentException("invalid configuration: " + what + " must be an integer from 1 to " + max + ", not " + v);
    }
    return b.longValue();
  }

  private static byte[] readBody(InputStream in) throws IOException {
    byte[] b = in.readNBytes(64 * 1024 + 1);
    if (b.length > 64 * 1024) {
      throw new IllegalArgumentException("body over 64 KiB");
    }
    return b;
  }

  private static String utf8(byte[] b) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("the body is not UTF-8");
    }
  }

  /** An answer: a status and its JSON body (empty: none). */
  private record Answer(int status, String body) {
    static Answer error(int status, String msg) {
      return new Answer(status, "{\"error\":" + quote(msg) + "}");
    }
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : String.valueOf(s).toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }
}
