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
import java.util.function.Supplier;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisURIHelper;

/**
 * Bucket4j's token bucket: one bucket per user of one bandwidth,
 * {@code capacity(N).refillGreedy(N, W)} (its quick start's way), each
 * request {@code tryConsume(cost)}, remaining {@code getAvailableTokens()}.
 * Its clock is a {@link TimeMeter} that reads the request's instant
 * ({@link Now}): clock control. Two kinds, {@link Memory} and {@link Redis}.
 */
abstract class Bucket4jCard implements Limiter {
  /** The request's instant as Bucket4j's clock. */
  static final TimeMeter CLOCK =
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

  /** The configuration in force: N per W, 5 per second until configured. */
  volatile BucketConfiguration config = config(5, 1000);

  static BucketConfiguration config(long n, long w) {
    return BucketConfiguration.builder()
        .addLimit(limit -> limit.capacity(n).refillGreedy(n, Duration.ofMillis(w)))
        .build();
  }

  /** The bucket of user, made with the configuration in force if new. */
  abstract Bucket bucket(String user);

  @Override
  public String capabilities() {
    return "{\"clock\":true,\"configure\":true,\"remaining\":true,\"reset\":true,\"cost\":true}";
  }

  /** tryConsume(cost), as given: Bucket4j refuses a cost of 0 or less. */
  @Override
  public boolean allow(String user, long cost) {
    return store(() -> bucket(user).tryConsume(cost));
  }

  @Override
  public long remaining(String user) {
    return store(() -> bucket(user).getAvailableTokens());
  }

  /** Runs a call of Bucket4j; a failure of Jedis is the store's. */
  static <T> T store(Supplier<T> call) {
    try {
      return call.get();
    } catch (JedisException e) {
      throw new StoreDown(e);
    }
  }

  /**
   * A LocalBucket per user in the card's map, made at the user's first
   * call ({@code withCustomTimePrecision}: the clock). Configure is
   * {@code replaceConfiguration} on each (TokensInheritanceStrategy.AS_IS);
   * Reset drops the bucket from the map (Bucket4j's {@code reset()}
   * refills a bucket, which is not forgetting it).
   */
  static final class Memory extends Bucket4jCard {
    private final Map<String, LocalBucket> users = new ConcurrentHashMap<>();

    @Override
    Bucket bucket(String user) {
      return users.computeIfAbsent(user, u -> Bucket.builder()
          .addLimit(config.getBandwidths()[0])
          .withCustomTimePrecision(CLOCK)
          .build());
    }

    @Override
    public synchronized void configure(long n, long w) {
      config = config(n, w);
      for (LocalBucket b : users.values()) {
        b.replaceConfiguration(config, TokensInheritanceStrategy.AS_IS);
      }
    }

    @Override
    public void reset(String user) {
      users.remove(user);
    }
  }

  /**
   * The Jedis proxy manager (compare-and-swap, on Jedis's pooled RedisClient), a user's bucket under
   * RLCONFORM_KEY_PREFIX + its id, with the expiration Bucket4j's
   * documentation recommends ({@code basedOnTimeForRefillingBucketUpToMax})
   * and {@code clientClock} (the clock). Configure raises the
   * configuration's version, which each bucket takes at its next call
   * ({@code withImplicitConfigurationReplacement}, AS_IS); Reset is
   * {@code removeProxy}. A failure of Redis is a 503.
   */
  static final class Redis extends Bucket4jCard {
    private final ProxyManager<byte[]> proxies;
    private final String prefix;
    private volatile long version = 1;

    Redis(String url, String prefix) {
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
      RedisClient jedis =
          RedisClient.builder()
              .hostAndPort(new HostAndPort(u.getHost(), u.getPort()))
              .clientConfig(client)
              .poolConfig(pool)
              .build();
      this.proxies =
          Bucket4jJedis.casBasedBuilder(jedis)
              .clientClock(CLOCK)
              .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ZERO))
              .build();
      this.prefix = prefix;
    }

    private byte[] key(String user) {
      return (prefix + user).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    Bucket bucket(String user) {
      BucketConfiguration c = config;
      return proxies.builder()
          .withImplicitConfigurationReplacement(version, TokensInheritanceStrategy.AS_IS)
          .build(key(user), () -> c);
    }

    /**
     * A new configuration version, which Bucket4j asks to only grow: the
     * wall clock's microseconds (or one more than the last), so that the
     * version last set at any instance on the machine is the highest.
     */
    @Override
    public synchronized void configure(long n, long w) {
      config = config(n, w);
      version = Math.max(version + 1, System.currentTimeMillis() * 1000);
    }

    @Override
    public void reset(String user) {
      store(() -> {
        proxies.removeProxy(key(user));
        return null;
      });
    }
  }
}
