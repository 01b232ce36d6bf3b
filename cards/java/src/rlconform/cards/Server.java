package rlconform.cards;

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
import java.util.concurrent.Executors;

/**
 * Serves one Java card (a {@link Limiter}: GuavaCard, Resilience4jCard,
 * Bucket4jCard) over rlconform's protocol v1 on 127.0.0.1:$PORT, with the
 * JDK's com.sun.net.httpserver and no framework. It validates what the
 * protocol says is invalid input (400), sets each request's instant
 * ({@link Now}: X-Rlc-Now-Ms, else the wall clock) and answers what the
 * card's library decided; the card only translates calls.
 *
 * <pre>java rlconform.cards.Server guava|resilience4j|bucket4j-memory|bucket4j-redis</pre>
 */
public final class Server {
  static final long MAX_LIMIT = (1L << 53) - 1;
  static final long MAX_WINDOW_MS = 3_153_600_000_000L;

  private final Limiter card;

  private Server(Limiter card) {
    this.card = card;
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: Server guava|resilience4j|resilience4j-semaphore|bucket4j-memory|bucket4j-redis");
      System.exit(2);
    }
    Limiter card =
        switch (args[0]) {
          case "guava" -> new GuavaCard();
          case "resilience4j" -> new Resilience4jCard();
          case "resilience4j-semaphore" -> new Resilience4jSemaphoreCard();
          case "bucket4j-memory" -> new Bucket4jCard.Memory();
          case "bucket4j-redis" -> new Bucket4jCard.Redis(System.getenv("RLCONFORM_REDIS_URL"), System.getenv().getOrDefault("RLCONFORM_KEY_PREFIX", ""));
          default -> throw new IllegalArgumentException("no card " + args[0]);
        };
    int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
    Server s = new Server(card);
    // A backlog of 128: rlconform's bursts open many connections at once.
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
    server.createContext("/", s::handle);
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
      } catch (Limiter.StoreDown e) {
        a = Answer.error(503, "the store failed: " + e.getMessage());
      } catch (UnsupportedOperationException e) {
        a = Answer.error(404, e.getMessage());
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
      return new Answer(200, card.capabilities());
    }
    if (!method.equals("POST")) {
      return Answer.error(404, "no such endpoint");
    }
    setClock(ex.getRequestHeaders().getFirst("X-Rlc-Now-Ms"));
    Map<String, Object> in = Json.object(utf8(raw));
    switch (path) {
      case "/rlc/v1/configure":
        card.configure(integer(in, "max_requests", MAX_LIMIT), integer(in, "window_ms", MAX_WINDOW_MS));
        return new Answer(204, "");
      case "/rlc/v1/allow":
        return new Answer(200, "{\"allowed\":" + card.allow(user(in), cost(in)) + "}");
      case "/rlc/v1/remaining":
        return new Answer(200, "{\"remaining\":" + card.remaining(user(in)) + "}");
      case "/rlc/v1/reset":
        card.reset(user(in));
        return new Answer(204, "");
      default:
        return Answer.error(404, "no such endpoint");
    }
  }

  /** Sets this thread's instant: the header's, else the wall clock's. */
  private static void setClock(String header) {
    if (header == null) {
      Now.set(System.currentTimeMillis());
      return;
    }
    try {
      long ms = Long.parseLong(header.trim());
      Math.multiplyExact(ms, 1_000_000L); // nanoseconds must fit a long
      Now.set(ms);
    } catch (ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException("X-Rlc-Now-Ms: " + header + " is not unix milliseconds");
    }
  }

  /**
   * The request's cost (1 without the member), as given, negative or zero
   * too: what the library makes of it is graded. A cost beyond a Java long
   * cannot be asked.
   */
  private static long cost(Map<String, Object> in) {
    if (!in.containsKey("cost")) {
      return 1;
    }
    Object c = in.get("cost");
    if (!(c instanceof BigInteger b) || b.bitLength() > 63) {
      throw new IllegalArgumentException("invalid request cost: not a Java long: " + c);
    }
    return b.longValue();
  }

  private static String user(Map<String, Object> in) {
    Object u = in.get("user_id");
    if (!(u instanceof String s) || s.isEmpty()) {
      throw new IllegalArgumentException("invalid user id: want a non-empty string");
    }
    return s;
  }

  /** The integer member name of in, from 1 to max. */
  private static long integer(Map<String, Object> in, String name, long max) {
    Object v = in.get(name);
    if (!(v instanceof BigInteger b) || b.signum() < 1 || b.compareTo(BigInteger.valueOf(max)) > 0) {
      throw new IllegalArgumentException("invalid configuration: " + name + " must be an integer from 1 to " + max + ", not " + v);
    }
    return b.longValue();
  }

  /** n as a Java int, for a library that takes one: larger is a 400. */
  static int javaInt(long n, String what) {
    if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(what + " " + n + " is not a Java int, which this library takes");
    }
    return (int) n;
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
