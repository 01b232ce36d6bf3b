<?php
// Symfony RateLimiter (Debian's php-symfony-rate-limiter) over rlconform's
// protocol v1, served by `php -S` with several workers
// (PHP_CLI_SERVER_WORKERS): every decision is the component's, on a
// CacheStorage over Symfony's RedisAdapter (phpredis), built as the
// component's README builds a factory: new RateLimiterFactory($config,
// $storage), no lock factory. CARD_POLICY is fixed_window, sliding_window
// or token_bucket; CARD_LOCK=redis gives the factory a LockFactory on a
// Redis lock store, as the framework's default lock_factory does.
//
// The environment is rlconform run --exec's: PORT, RLCONFORM_REDIS_URL,
// RLCONFORM_KEY_PREFIX. The configuration (limit, window) lives in a file
// per instance in CARD_CONFIG_DIR, since every request runs in a fresh PHP
// state.

require_once '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
require_once '/usr/share/php/Symfony/Component/Cache/autoload.php';

use Symfony\Component\Cache\Adapter\RedisAdapter;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\RateLimiter\RateLimiterFactory;
use Symfony\Component\RateLimiter\Storage\CacheStorage;

function answer(int $status, $body = null): void
{
    http_response_code($status);
    if (null !== $body) {
        header('Content-Type: application/json');
        echo json_encode($body);
    }
}

function configPath(): string
{
    // CARD_CONFIG_DIR is a directory of the instance's own (php/serve
    // makes one): a known name in the shared temporary directory could be
    // taken first by anyone.
    return getenv('CARD_CONFIG_DIR').'/rlconform-card-symfony-'.getenv('PORT').'.json';
}

function config(): array
{
    $raw = @file_get_contents(configPath());
    $c = $raw ? json_decode($raw, true) : null;
    return is_array($c) ? $c : ['limit' => 5, 'window_ms' => 1000];
}

function redis(): \Redis
{
    static $r = null;
    if (null === $r) {
        // Half a second to connect and to read, as the Go cards' shim: a
        // frozen Redis (robust/store-outage) then fails a call within the
        // grader's store timeout (1 s) even when it makes two round trips.
        $r = RedisAdapter::createConnection(getenv('RLCONFORM_REDIS_URL'), ['timeout' => 0.5, 'read_timeout' => 0.5, 'retry_interval' => 0]);
    }
    return $r;
}

function limiter(string $user)
{
    $c = config();
    $seconds = intdiv($c['window_ms'], 1000);
    $policy = getenv('CARD_POLICY') ?: 'fixed_window';
    $config = ['id' => 'card', 'policy' => $policy, 'limit' => $c['limit']];
    if ('token_bucket' === $policy) {
        $config['rate'] = ['interval' => $seconds.' seconds', 'amount' => $c['limit']];
    } else {
        $config['interval'] = $seconds.' seconds';
    }
    // RedisAdapter appends ':' to its namespace, which may not hold one.
    $namespace = rtrim(getenv('RLCONFORM_KEY_PREFIX'), ':');
    $storage = new CacheStorage(new RedisAdapter(redis(), $namespace));
    $locks = 'redis' === getenv('CARD_LOCK') ? new LockFactory(new RedisStore(redis())) : null;
    return (new RateLimiterFactory($config, $storage, $locks))->create($user);
}

$method = $_SERVER['REQUEST_METHOD'];
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ('GET' === $method && '/rlc/v1/capabilities' === $path) {
    // consume(int $tokens) is every policy's weighted call.
    return answer(200, ['clock' => false, 'configure' => true, 'remaining' => true, 'reset' => true, 'cost' => true]);
}
if ('POST' !== $method) {
    return answer(404, ['error' => 'no such endpoint']);
}
$in = json_decode(file_get_contents('php://input'), true);
if (!is_array($in)) {
    return answer(400, ['error' => 'malformed request body']);
}
try {
    switch ($path) {
        case '/rlc/v1/configure':
            $n = $in['max_requests'] ?? null;
            $w = $in['window_ms'] ?? null;
            if (!is_int($n) || !is_int($w) || $n < 1 || $w < 1) {
                return answer(400, ['error' => 'invalid configuration: max_requests and window_ms must be integers of at least 1']);
            }
            // The component's intervals are whole seconds
            // (TimeUtil::dateIntervalToSeconds).
            if (0 !== $w % 1000 || $w > 3153600000000 || $n > 2147483647) {
                return answer(400, ['error' => "invalid configuration: Symfony RateLimiter takes whole seconds (window_ms $w) and a PHP int limit"]);
            }
            file_put_contents(configPath(), json_encode(['limit' => $n, 'window_ms' => $w]), LOCK_EX);
            return answer(204);
        case '/rlc/v1/allow':
        case '/rlc/v1/remaining':
        case '/rlc/v1/reset':
            $user = $in['user_id'] ?? null;
            if (!is_string($user) || '' === $user) {
                return answer(400, ['error' => 'invalid user id: empty']);
            }
            $lim = limiter($user);
            if ('/rlc/v1/reset' === $path) {
                $lim->reset();
                return answer(204);
            }
            if ('/rlc/v1/remaining' === $path) {
                // consume(0) takes nothing and answers what is left, as
                // the component computes it, unclamped: the sliding
                // window's limit - hitCount (SlidingWindowLimiter.php:89-92,
                // below 0 under a lowered limit) and the fixed window's
                // maxSize - hitCount (Window.php:68-76; a hit count a
                // negative cost took below 0 is stored as an unsigned
                // 32-bit 'N', :60, :91, :111, and read back as 2^32 - 2),
                // which getRemainingTokens returns as is
                // (RateLimit.php:58-61). What the library says is graded.
                return answer(200, ['remaining' => $lim->consume(0)->getRemainingTokens()]);
            }
            // A request's cost is consume($tokens), as given: the fixed
            // window and the token bucket throw \InvalidArgumentException
            // for more tokens than the limit or the burst
            // (FixedWindowLimiter.php:52-54, TokenBucketLimiter.php:56-58),
            // invalid input (400); the sliding window refuses it
            // (SlidingWindowLimiter.php:76-78). A negative cost is taken by
            // every policy (a refund): passed on.
            $cost = array_key_exists('cost', $in) ? $in['cost'] : 1;
            if (!is_int($cost)) {
                return answer(400, ['error' => 'invalid request cost: not an integer']);
            }
            try {
                $accepted = $lim->consume($cost)->isAccepted();
            } catch (\InvalidArgumentException $e) {
                // The policies throw the base class; the store's and the
                // lock's subclasses are failures (503, below).
                if (\InvalidArgumentException::class !== get_class($e)) {
                    throw $e;
                }
                return answer(400, ['error' => 'invalid request cost: '.$e->getMessage()]);
            }
            return answer(200, ['allowed' => $accepted]);
    }
    return answer(404, ['error' => 'no such endpoint']);
} catch (\RedisException | \Symfony\Component\Cache\Exception\InvalidArgumentException | \Symfony\Component\Lock\Exception\ExceptionInterface $e) {
    // Redis unreachable: RedisAdapter::createConnection throws "Redis
    // connection failed" (Cache/Traits/RedisTrait.php), phpredis a
    // RedisException, the lock store its own.
    return answer(503, ['error' => 'store: '.get_class($e).': '.$e->getMessage()]);
} catch (\Throwable $e) {
    return answer(500, ['error' => get_class($e).': '.$e->getMessage()]);
}
