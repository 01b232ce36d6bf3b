package rlconform.cards;

import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.TokensInheritanceStrategy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.local.LocalBucket;
import io.github.bucket4j.redis.jedis.Bucket4jJedis;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisURIHelper;

/**
 * Bucket4j's token bucket: one bucket per user of one bandwidth,
 * {@code capacity(N).refillGreedy(N, W)} (its quick start's way), each
 * request {@code tryConsume(cost)}. Its clock is a {@link TimeMeter} that
 * reads the request's instant ({@link Now}): {@code withCustomTimePrecision}
 * in memory, {@code clientClock} on Redis (clock control). Two kinds:
 *
 * <ul>
 *   <li>{@link #memory}: a LocalBucket per user in the card's map, made at
 *       the user's first request; Configure is {@code replaceConfiguration}
 *       on each (TokensInheritanceStrategy.AS_IS), Reset drops the bucket
 *       from the map (Bucket4j's {@code reset()} refills it, which is not
 *       forgetting it).
 *   <li>{@link #redis}: the Jedis proxy manager (compare-and-swap), the
 *       bucket of a user under RLCONFORM_KEY_PREFIX + its id, with the
 *       expiration its documentation recommends
 *       ({@code basedOnTimeForRefillingBucketUpToMax}); Configure raises the
 *       configuration's version, which each bucket takes at its next call
 *       ({@code withImplicitConfigurationReplacement}, AS_IS); Reset is
 *       {@code removeProxy}. A failure of Redis is a 503.
 * </ul>
 */
final class Bucket4jCard implements Limiter {
  private static final TimeMeter CLOCK =
      new TimeMeter() {
        @Override
        public long currentTimeNanos() {
          return Now.nanos();
        }

        @Override
        public boolean isWallClockBased() {
          return true;
        }
      };

  private final Function<String, Bucket> bucket;
  private final Function<String, Void> forget;
  private final Runnable replaced;
  private volatile BucketConfiguration config = config(5, 1000);
  private volatile long version = 1;

  private Bucket4jCard(Function<Bucket4jCard, Function<String, Bucket>> bucket, Function<String, Void> forget, Runnable replaced) {
    this.bucket = bucket.apply(this);
    this.forget = forget;
    this.replaced = replaced;
  }

  static BucketConfiguration config(long n, long w) {
    return BucketConfiguration.builder()
        .addLimit(limit -> limit.capacity(n).refillGreedy(n, Duration.ofMillis(w)))
        .build();
  }

  /** Buckets in memory, one LocalBucket per user. */
  static Bucket4jCard memory() {
    Map<String, LocalBucket> users = new ConcurrentHashMap<>();
    Bucket4jCard[] card = new Bucket4jCard[1];
    card[0] =
        new Bucket4jCard(
            c -> user -> users.computeIfAbsent(user, u -> Bucket.builder()
                .addLimit(c.config.getBandwidths()[0])
                .withCustomTimePrecision(CLOCK)
                .build()),
            user -> {
              users.remove(user);
              return null;
            },
            () -> {
              for (LocalBucket b : users.values()) {
                b.replaceConfiguration(card[0].config, TokensInheritanceStrategy.AS_IS);
              }
            });
    return card[0];
  }

  /** Buckets on Redis at url through Jedis, under prefix. */
  static Bucket4jCard redis(String url, String prefix) {
    if (url == null || url.isEmpty()) {
      throw new IllegalArgumentException("RLCONFORM_REDIS_URL is not set: run the card with rlconform run --exec");
    }
    URI u = URI.create(url);
    // Timeouts under the grader's store timeout (1 s), a connection for
    // each of the server's threads, and no wait past them for one.
    DefaultJedisClientConfig client =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(300)
            .socketTimeoutMillis(500)
            .database(JedisURIHelper.getDBIndex(u))
            .user(JedisURIHelper.getUser(u))
            .password(JedisURIHelper.getPassword(u))
            .build();
    GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
    pool.setMaxTotal(32);
    pool.setMaxWait(Duration.ofMillis(300));
    JedisPooled jedis = new JedisPooled(new HostAndPort(u.getHost(), u.getPort()), client, pool);
    ProxyManager<byte[]> proxies =
        Bucket4jJedis.casBasedBuilder(jedis)
            .clientClock(CLOCK)
            .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ZERO))
            .build();
    Function<String, byte[]> key = user -> (prefix + user).getBytes(StandardCharsets.UTF_8);
    return new Bucket4jCard(
        c -> user -> proxies.builder()
            .withImplicitConfigurationReplacement(c.version, TokensInheritanceStrategy.AS_IS)
            .build(key.apply(user), () -> c.config),
        user -> {
          proxies.removeProxy(key.apply(user));
          return null;
        },
        () -> {});
  }

  @Override
  public String capabilities() {
    return "{\"clock\":true,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  /**
   * Sets the configuration of every bucket. In memory, each bucket's
   * {@code replaceConfiguration}; on Redis, a new configuration version,
   * which Bucket4j asks to only grow: the wall clock's microseconds (or
   * one more than the last), so that the version last set at any
   * instance on the machine is the highest.
   */
  @Override
  public synchronized void configure(long n, long w) {
    config = config(n, w);
    version = Math.max(version + 1, System.currentTimeMillis() * 1000);
    store(() -> {
      replaced.run();
      return null;
    });
  }

  /** tryConsume(cost), as given. */
  @Override
  public boolean allow(String user, long cost) {
    return store(() -> bucket.apply(user).tryConsume(cost));
  }

  /** getAvailableTokens. */
  @Override
  public long remaining(String user) {
    return store(() -> bucket.apply(user).getAvailableTokens());
  }

  @Override
  public void reset(String user) {
    store(() -> forget.apply(user));
  }

  /** Runs a call of Bucket4j; a failure of Jedis is the store's. */
  private static <T> T store(java.util.function.Supplier<T> call) {
    try {
      return call.get();
    } catch (JedisException e) {
      throw new StoreDown(e);
    }
  }
}
