package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// A card is one limiter graded the library's own way.
type card struct {
	// Name is the card's id: its section in docs/cards.md, its notes
	// (notes/NAME.md) and its lines in expected.txt.
	Name string
	// Library names what is graded, and Version its pinned version (Go
	// modules; Maven Central's, pinned in java/pom.xml);
	// Debian lists the packages whose installed versions are recorded.
	Library, Version string
	Debian           []string
	// NPM lists the npm packages whose versions cards/node's
	// package-lock.json pins.
	NPM []string
	// PyPI lists the Python packages whose versions
	// cards/python/requirements.txt pins.
	PyPI []string
	// Binary, for a gateway, prints its version.
	Binary []string
	// Served says how the card serves it.
	Served string
	// FakeClockOnStore: the card takes the grader's clock, but its store
	// expires keys on its own, in real time. A failure its note does not
	// confirm apart (a cards/repro test) may be one no real schedule
	// shows (a key the store would have expired long before the fake
	// clock's next call): the page says it was seen on the fake clock
	// only.
	FakeClockOnStore bool
	// Shim lists the operations the card's shim supplies itself, where
	// the library has no call for them (configure, reset, remaining):
	// a spec that needs one is graded on the shim's code, and the page
	// says so beside its verdict, never as the library's. The card's
	// notes say what the shim does.
	Shim []string
	// Exec is rlconform run --exec's command ({card}: the Go cards'
	// binary, {dir}: cards/), Instances how many.
	Exec      string
	Instances int
	// Memory names a Go card that keeps its state in its process: it is
	// started by the cards and graded as one --target (no store: no key
	// hygiene, no store outage to grade).
	Memory string
	// Serve is, like Memory, a limiter that keeps its state in its
	// process, served by another language: a command (run by sh, {dir}:
	// cards/) that serves protocol v1 on 127.0.0.1:$PORT, started by the
	// cards and graded as one --target.
	Serve string
	// Endpoint starts an HTTP service limiting X-User to Limit (default
	// 5) per Window (default 1s).
	Endpoint func(g *grader, redisURL, prefix string, window time.Duration) (url string, stop func(), err error)
	Window   time.Duration
	Limit    int
	// Identity, for an endpoint, replaces "--identity header:X-User":
	// the flags that put the user into its requests and read its
	// answers ({dir}: cards/).
	Identity []string
	// RLS: Endpoint gives the HOST:PORT of an RLS server (Envoy's rate
	// limit service over gRPC), graded with --rls.
	RLS bool
	// InspectStore gives an endpoint's runs its Redis (--store-url,
	// --store-prefix), for robust/key-hygiene.
	InspectStore bool
	// Profile is the library's own algorithm, as rlconform names it.
	Profile string
	// RunFlags are added to identify and both runs.
	RunFlags []string
	// IDs, when set, are the only specs its runs grade (rlconform run
	// --id), and NoIdentify skips identify: for a card whose full
	// gradings, in real time on long windows, would outlast the cards'
	// time in CI (another card identifies the same library).
	IDs        string
	NoIdentify bool
	// Scales are the further scales a card with clock control is graded
	// at, each "N/W" (100/1s: rlconform identify and run --limit 100
	// --window 1s): identify, and a run of its own profile. A profile
	// that holds at one scale only shows so on the page.
	Scales []string
}

func (c card) version(dir string) string {
	switch {
	case c.Version != "":
		return c.Version
	case len(c.NPM) > 0:
		return npmVersions(dir, c.NPM)
	case len(c.PyPI) > 0:
		return pypiVersions(dir, c.PyPI)
	case len(c.Debian) > 0:
		var vs []string
		for _, p := range c.Debian {
			vs = append(vs, p+" "+debVersion(p))
		}
		return "Debian " + strings.Join(vs, ", ")
	case len(c.Binary) > 0:
		return binaryVersion(c.Binary...)
	}
	return "this commit"
}

// cards are graded in this order; the table of docs/cards.md keeps it.
var cards = []card{
	{Name: "reference", Library: "rlconform reference (sliding log)", Served: "protocol v1 (adapters.Handler), 2 instances on one Redis, clock control",
		Exec: "{card} reference", Instances: 2, Scales: []string{"100/1s"}, Profile: "sliding-log"},
	{Name: "reference-middleware", Library: "rlconform reference + middleware", Served: "endpoint: middleware.New over the reference, X-User",
		Endpoint: goEndpoint("reference-middleware"), Profile: "sliding-log"},
	{Name: "redis_rate", Library: "github.com/go-redis/redis_rate/v10", Version: "v10.0.1", Served: "protocol v1 shim, 2 instances on one Redis",
		Exec: "{card} redis_rate", Instances: 2, Profile: "gcra"},
	{Name: "ulule-redis", Library: "github.com/ulule/limiter/v3 (Redis store)", Version: "v3.11.2", Served: "protocol v1 shim, 2 instances on one Redis",
		Exec: "{card} ulule-redis", Instances: 2, Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "ulule-stdlib", Library: "github.com/ulule/limiter/v3 (stdlib middleware, Redis store)", Version: "v3.11.2", Served: "endpoint: its stdlib middleware, key X-User",
		Endpoint: goEndpoint("ulule-stdlib"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "go-zero-period", Library: "github.com/zeromicro/go-zero core/limit PeriodLimit (its Redis client)", Version: "v1.10.3", Served: "protocol v1 shim over PeriodLimit.TakeCtx, 2 instances on one Redis",
		Exec: "{card} go-zero-period", Instances: 2, Shim: []string{"configure"}, Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "go-zero-token", Library: "github.com/zeromicro/go-zero core/limit TokenLimiter (its Redis client)", Version: "v1.10.3", Served: "protocol v1 shim, a TokenLimiter per user (AllowCtx), 2 instances on one Redis",
		Exec: "{card} go-zero-token", Instances: 2, Shim: []string{"configure"}, Profile: "token-bucket:refill=second"},
	{Name: "throttled-goredis", Library: "github.com/throttled/throttled/v2 (GCRA, go-redis v9 store)", Version: "v2.15.0", Served: "protocol v1 shim over GCRARateLimiterCtx, 2 instances on one Redis",
		Exec: "{card} throttled-goredis", Instances: 2, Shim: []string{"configure"}, Profile: "gcra", RunFlags: []string{"--realtime-window", "1500ms"}},
	{Name: "throttled-http", Library: "github.com/throttled/throttled/v2 (HTTPRateLimiterCtx, go-redis v9 store)", Version: "v2.15.0", Served: "endpoint: HTTPRateLimiterCtx, VaryBy X-User",
		Endpoint: goEndpoint("throttled-http"), Window: 1500 * time.Millisecond, Profile: "gcra"},
	{Name: "throttled-memstore", Library: "github.com/throttled/throttled/v2 (GCRA, memory store)", Version: "v2.15.0", Served: "protocol v1 shim, clock control through the store's SetTimeNow",
		Memory: "throttled-memstore", Shim: []string{"configure"}, Scales: []string{"100/1s"}, Profile: "gcra"},
	{Name: "sethvargo-memory", Library: "github.com/sethvargo/go-limiter (memory store)", Version: "v0.7.1", Served: "protocol v1 shim, one process",
		Memory: "sethvargo-memory", Shim: []string{"configure", "remaining"}, Profile: "fixed-window:align=first-grid,renew=kept"},
	{Name: "x-time-rate", Library: "golang.org/x/time/rate", Version: "v0.16.0", Served: "protocol v1 shim, a Limiter per user, clock control through AllowN(t)",
		Memory: "x-time-rate", Shim: []string{"reset", "remaining"}, Scales: []string{"100/1s"}, Profile: "token-bucket",
		// The seed whose strict/differential schedule reaches the float
		// drift (notes/x-time-rate.md: TokensAt a hair below a whole
		// number, which AllowN admits): graded exactly, every time.
		RunFlags: []string{"--seed", "17643693416623303077"}},
	{Name: "symfony-fixed-window", Library: "Symfony RateLimiter fixed_window (CacheStorage, RedisAdapter)", Debian: []string{"php-symfony-rate-limiter", "php-redis"},
		Served: "protocol v1 router under php -S, 2 instances × 4 workers, no lock factory",
		Exec:   "CARD_POLICY=fixed_window {dir}/php/serve", Instances: 2, Shim: []string{"configure"}, Profile: "fixed-window:align=first-hit,query=write"},
	{Name: "symfony-fixed-window-lock", Library: "Symfony RateLimiter fixed_window (CacheStorage, RedisAdapter, LockFactory on RedisStore)", Debian: []string{"php-symfony-rate-limiter", "php-symfony-lock", "php-redis"},
		Served: "protocol v1 router under php -S, 2 instances × 4 workers, a Redis lock",
		Exec:   "CARD_POLICY=fixed_window CARD_LOCK=redis {dir}/php/serve", Instances: 2, Shim: []string{"configure"}, Profile: "fixed-window:align=first-hit,query=write"},
	{Name: "symfony-sliding-window", Library: "Symfony RateLimiter sliding_window (CacheStorage, RedisAdapter)", Debian: []string{"php-symfony-rate-limiter", "php-redis"},
		Served: "protocol v1 router under php -S, 2 instances × 4 workers, no lock factory",
		Exec:   "CARD_POLICY=sliding_window {dir}/php/serve", Instances: 2, Shim: []string{"configure"}, Profile: "sliding-counter:align=first-grid"},
	{Name: "symfony-token-bucket", Library: "Symfony RateLimiter token_bucket (CacheStorage, RedisAdapter)", Debian: []string{"php-symfony-rate-limiter", "php-redis"},
		Served: "protocol v1 router under php -S, 2 instances × 4 workers, no lock factory",
		Exec:   "CARD_POLICY=token_bucket {dir}/php/serve", Instances: 2, Shim: []string{"configure"}, Profile: "token-bucket:refill=interval,expire=idle,query=write"},
	{Name: "rack-attack", Library: "rack-attack throttle (RedisProxy)", Debian: []string{"ruby-rack-attack", "ruby-redis", "puma"},
		Served:   "endpoint: Rack::Attack under puma, 2 workers × 4 threads, discriminator X-User",
		Endpoint: rackAttack, Profile: "fixed-window:align=epoch,count-denied=true,query=read"},
	{Name: "envoy-ratelimit", Library: "envoyproxy/ratelimit (Redis, gRPC)", Version: envoyVersion,
		Served:   "RLS over gRPC as Envoy calls it: ShouldRateLimit, domain rlconform, the user in the descriptor entry user, the state from the first DescriptorStatus",
		Endpoint: envoyRatelimit, RLS: true, Profile: "fixed-window:align=epoch,count-denied=true,query=read", InspectStore: true,
		Identity: []string{"--domain", "rlconform", "--descriptor", "user=x", "--identity", "descriptor:user", "--rls-configure", "limit"},
		// The grader paces an RLS server at 2N+8 requests a second by
		// default: core/concurrent-4's bursts of 50 (at 25 per second)
		// would span a second, and the whole window's edge with it.
		RunFlags: []string{"--max-rps", "400"}},
	{Name: "limitador", Library: "limitador (the crate limitador-server serves; in memory)", Version: limitadorVersion,
		Served:   "RLS over gRPC as Envoy calls it: limitador-server's envoy_rls/server.rs over the crate (cards/rust/limitador), namespace rlconform, a counter per descriptors[0].user, --rate-limit-headers",
		Endpoint: limitadorRLS(5), RLS: true, Profile: "fixed-window:align=first-hit",
		Identity: []string{"--domain", "rlconform", "--descriptor", "user=x", "--identity", "descriptor:user"},
		RunFlags: []string{"--max-rps", "400"}},
	{Name: "envoy-ratelimit-minute", Library: "envoyproxy/ratelimit (Redis, gRPC), a rule per minute", Version: envoyVersion,
		Served:   "as envoy-ratelimit, the user in the descriptor entry user_minute, whose rule allows 20 a minute",
		Endpoint: envoyRatelimit, Window: time.Minute, Limit: 20, RLS: true, Profile: "fixed-window:align=epoch,count-denied=true,query=read", InspectStore: true,
		Identity: []string{"--domain", "rlconform", "--descriptor", "user_minute=x", "--identity", "descriptor:user_minute", "--rls-configure", "limit"},
		// Graded whole, each run takes about 6 minutes of minute-long
		// windows, and identify 5 (every spec passed, as the per-second
		// card's do): the runs grade what a unit of a minute changes, the
		// fields (current_limit, duration_until_reset) and the core; the
		// per-second card identifies the service.
		RunFlags: []string{"--max-rps", "400"}, IDs: "core/,http/", NoIdentify: true},
	{Name: "guava", Library: "Guava RateLimiter.create (SmoothBursty)", Version: "com.google.guava:guava 33.8.0-jre",
		Served: "protocol v1 shim on the JDK's com.sun.net.httpserver, a RateLimiter per user, clock control through its SleepingStopwatch",
		Serve:  "{dir}/java/serve guava", Shim: []string{"reset"}, Scales: []string{"100/1s"}, Profile: "smooth-bursty"},
	{Name: "limits-fixed-window", Library: "python limits FixedWindowRateLimiter (RedisStorage)", PyPI: []string{"limits", "redis"},
		Served: "protocol v1 shim on http.server, 2 instances on one Redis",
		Exec:   "CARD_STRATEGY=fixed-window {dir}/python/serve", Instances: 2, Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "limits-moving-window", Library: "python limits MovingWindowRateLimiter (RedisStorage)", PyPI: []string{"limits", "redis"},
		Served: "protocol v1 shim on http.server, 2 instances on one Redis",
		Exec:   "CARD_STRATEGY=moving-window {dir}/python/serve", Instances: 2, Profile: "sliding-log"},
	{Name: "limits-moving-window-memory", Library: "python limits MovingWindowRateLimiter (MemoryStorage)", PyPI: []string{"limits"},
		Served: "protocol v1 shim on http.server, its in-memory storage, one process",
		Serve:  "CARD_STRATEGY=moving-window CARD_STORAGE=memory {dir}/python/serve", Profile: "sliding-log"},
	{Name: "flask-limiter", Library: "Flask-Limiter (fixed-window, Redis storage, headers enabled)", PyPI: []string{"flask-limiter", "limits", "flask"},
		Served:   "endpoint: a Flask app under werkzeug's threaded server, key_func X-User",
		Endpoint: pythonEndpoint("flask_app.py"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "flask-limiter-memory", Library: "Flask-Limiter (fixed-window, in-memory storage, headers enabled)", PyPI: []string{"flask-limiter", "limits", "flask"},
		Served:   "endpoint: as flask-limiter, storage_uri \"memory://\" (its default storage)",
		Endpoint: pythonEndpoint("flask_app.py", "CARD_STORAGE=memory"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "flask-limiter-moving-window", Library: "Flask-Limiter (moving-window, Redis storage, headers enabled)", PyPI: []string{"flask-limiter", "limits", "flask"},
		Served:   "endpoint: as flask-limiter, strategy=\"moving-window\"",
		Endpoint: pythonEndpoint("flask_app.py", "CARD_STRATEGY=moving-window"), Profile: "sliding-log"},
	{Name: "flask-limiter-sliding-window-counter", Library: "Flask-Limiter (sliding-window-counter, Redis storage, headers enabled)", PyPI: []string{"flask-limiter", "limits", "flask"},
		Served:   "endpoint: as flask-limiter, strategy=\"sliding-window-counter\"",
		Endpoint: pythonEndpoint("flask_app.py", "CARD_STRATEGY=sliding-window-counter"), Profile: "sliding-counter:admit=below,align=first-grid,count-denied=false,renew=any"},
	{Name: "nginx", Library: "nginx limit_req rate=5r/s burst=4 nodelay", Binary: []string{"/usr/sbin/nginx", "-v"}, Served: "endpoint: gateways/nginx.conf.tmpl",
		Endpoint: nginx, Profile: "gcra"},
	{Name: "haproxy", Library: "HAProxy http_req_rate(1s) gt 5", Binary: []string{"/usr/sbin/haproxy", "-v"}, Served: "endpoint: gateways/haproxy.cfg.tmpl",
		Endpoint: haproxy, Profile: "sliding-counter:align=first-grid,count-denied=true"},
	{Name: "express-rate-limit-draft6", Library: "express-rate-limit (rate-limit-redis store, ioredis), standardHeaders: 'draft-6'", NPM: expressRateLimit,
		Served:   "endpoint: its Express middleware, keyGenerator X-User, one Node.js process",
		Endpoint: nodeEndpoint("express.js", "CARD_DRAFT=draft-6"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "express-rate-limit-draft7", Library: "express-rate-limit (rate-limit-redis store, ioredis), standardHeaders: 'draft-7'", NPM: expressRateLimit,
		Served:   "endpoint: its Express middleware, keyGenerator X-User, one Node.js process",
		Endpoint: nodeEndpoint("express.js", "CARD_DRAFT=draft-7"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "express-rate-limit-draft8", Library: "express-rate-limit (rate-limit-redis store, ioredis), standardHeaders: 'draft-8'", NPM: expressRateLimit,
		Served:   "endpoint: its Express middleware, keyGenerator X-User, one Node.js process",
		Endpoint: nodeEndpoint("express.js", "CARD_DRAFT=draft-8"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "express-rate-limit-memory", Library: "express-rate-limit (its default MemoryStore), standardHeaders: 'draft-8'", NPM: []string{"express-rate-limit", "express"},
		Served:   "endpoint: its Express middleware with no store given (the MemoryStore), keyGenerator X-User, one Node.js process",
		Endpoint: nodeEndpoint("express.js", "CARD_DRAFT=draft-8", "CARD_STORE=memory"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "rate-limiter-flexible", Library: "rate-limiter-flexible RateLimiterRedis (ioredis)", NPM: []string{"rate-limiter-flexible", "ioredis"},
		Served: "protocol v1 shim under Node.js (node/flexible.js), 2 instances on one Redis",
		Exec:   "node {dir}/node/flexible.js", Instances: 2, Shim: []string{"configure", "remaining"}, Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "rate-limiter-flexible-memory", Library: "rate-limiter-flexible RateLimiterMemory", NPM: []string{"rate-limiter-flexible"},
		Served: "protocol v1 shim under Node.js (node/flexible.js, CARD_STORE=memory), one process",
		Serve:  "CARD_STORE=memory node {dir}/node/flexible.js", Shim: []string{"configure", "remaining"}, Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "nestjs-throttler", Library: "@nestjs/throttler ThrottlerGuard (ThrottlerStorageService, in memory)", NPM: []string{"@nestjs/throttler", "@nestjs/core", "@nestjs/platform-express"},
		Served:   "endpoint: ThrottlerModule.forRoot and ThrottlerGuard as the app's guard, getTracker X-User, one Node.js process",
		Endpoint: nodeEndpoint("nest.js"), Profile: "sliding-log"},
	{Name: "nestjs-throttler-noblock", Library: "@nestjs/throttler ThrottlerGuard (ThrottlerStorageService, in memory), blockDuration: 0", NPM: []string{"@nestjs/throttler", "@nestjs/core", "@nestjs/platform-express"},
		Served:   "endpoint: as nestjs-throttler, the throttler's blockDuration 0",
		Endpoint: nodeEndpoint("nest.js", "CARD_BLOCK_MS=0"), Profile: "sliding-log"},
	// Fiber's FixedWindow decides on a clock of whole seconds that ticks
	// at its process's phase: align=first-second.
	{Name: "fiber2-fixed", Library: "github.com/gofiber/fiber/v2 middleware/limiter, FixedWindow (memory storage)", Version: "v2.52.15",
		Served:   "endpoint: limiter.New on a Fiber app, KeyGenerator X-User, served by Fiber",
		Endpoint: goEndpoint("fiber2-fixed"), Profile: "fixed-window:align=first-second,count-denied=true"},
	{Name: "fiber3-fixed", Library: "github.com/gofiber/fiber/v3 middleware/limiter, FixedWindow (memory storage)", Version: "v3.1.0",
		Served:   "endpoint: limiter.New on a Fiber app, KeyGenerator X-User, served by Fiber",
		Endpoint: goEndpoint("fiber3-fixed"), Profile: "fixed-window:align=first-second,count-denied=true"},
	{Name: "fiber2-sliding", Library: "github.com/gofiber/fiber/v2 middleware/limiter, SlidingWindow (memory storage)", Version: "v2.52.15",
		Served:   "endpoint: limiter.New on a Fiber app, KeyGenerator X-User, served by Fiber",
		Endpoint: goEndpoint("fiber2-sliding"), Profile: "sliding-counter:align=first-grid,count-denied=true"},
	{Name: "fiber3-sliding", Library: "github.com/gofiber/fiber/v3 middleware/limiter, SlidingWindow (memory storage)", Version: "v3.1.0",
		Served:   "endpoint: limiter.New on a Fiber app, KeyGenerator X-User, served by Fiber",
		Endpoint: goEndpoint("fiber3-sliding"), Profile: "sliding-counter:admit=at-most,align=first-grid,count-denied=true"},
	{Name: "echo", Library: "github.com/labstack/echo/v4 middleware.RateLimiter (memory store)", Version: "v4.16.6",
		Served:   "endpoint: RateLimiterWithConfig on an Echo app, Rate N/W per second, Burst N, IdentifierExtractor X-User, served by net/http",
		Endpoint: goEndpoint("echo"), Profile: "token-bucket"},
	// The Java cards (cards/java: pom.xml pins the libraries; one server,
	// a class per library), each with its library's own clock injected.
	{Name: "resilience4j", Library: "Resilience4j AtomicRateLimiter (acquirePermission, timeoutDuration 0)", Version: "io.github.resilience4j:resilience4j-ratelimiter 2.4.0",
		Served: "protocol v1 shim on the JDK's com.sun.net.httpserver, an AtomicRateLimiter per user, clock control through its nanoTime supplier",
		Serve:  "{dir}/java/serve resilience4j", Shim: []string{"configure", "reset"}, Scales: []string{"100/1s"}, Profile: "fixed-window:align=first-grid,query=write"},
	{Name: "resilience4j-semaphore", Library: "Resilience4j SemaphoreBasedRateLimiter (acquirePermission, timeoutDuration 0)", Version: "io.github.resilience4j:resilience4j-ratelimiter 2.4.0",
		Served: "protocol v1 shim on the JDK's com.sun.net.httpserver, a SemaphoreBasedRateLimiter per user refreshed by one shared scheduler, in real time",
		Serve:  "{dir}/java/serve resilience4j-semaphore", Shim: []string{"configure", "reset"}, Profile: "fixed-window:align=first-grid,query=write"},
	{Name: "bucket4j-memory", Library: "Bucket4j LocalBucket (capacity N, refillGreedy N per W)", Version: "com.bucket4j:bucket4j_jdk17-core 8.17.0",
		Served: "protocol v1 shim on the JDK's com.sun.net.httpserver, a bucket per user, clock control through its TimeMeter",
		Serve:  "{dir}/java/serve bucket4j-memory", Shim: []string{"reset"}, Scales: []string{"100/1s"}, Profile: "token-bucket"},
	{Name: "bucket4j-redis", Library: "Bucket4j on Redis (Jedis compare-and-swap proxy manager, capacity N, refillGreedy N per W)", Version: "com.bucket4j:bucket4j_jdk17-jedis 8.17.0, redis.clients:jedis 7.5.3",
		Served: "protocol v1 shim on the JDK's com.sun.net.httpserver, 2 instances on one Redis, clock control through its client clock",
		Exec:   "{dir}/java/serve bucket4j-redis", Instances: 2, Profile: "token-bucket", FakeClockOnStore: true,
		// Its keys expire on Redis's clock, in real time: with a window of
		// a second they would expire within a spec's own real second, on
		// a fake clock that has not moved. A window of a minute keeps
		// them for as long as a spec runs.
		Scales: []string{"100/1m"}},
	{Name: "limits-sliding-window-counter", Library: "python limits SlidingWindowCounterRateLimiter (RedisStorage)", PyPI: []string{"limits", "redis"},
		Served: "protocol v1 shim on http.server, 2 instances on one Redis",
		Exec:   "CARD_STRATEGY=sliding-window-counter {dir}/python/serve", Instances: 2, Profile: "sliding-counter:align=first-grid,count-denied=false,renew=any"},
	{Name: "slowapi", Library: "slowapi (SlowAPIMiddleware, limits' fixed window on Redis, headers enabled)", PyPI: []string{"slowapi", "limits", "starlette", "uvicorn"},
		Served:   "endpoint: a Starlette app under uvicorn, key_func X-User",
		Endpoint: pythonEndpoint("slowapi_app.py"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "slowapi-memory", Library: "slowapi (SlowAPIMiddleware, limits' fixed window in memory, headers enabled)", PyPI: []string{"slowapi", "limits", "starlette", "uvicorn"},
		Served:   "endpoint: as slowapi, storage_uri \"memory://\" (its default storage)",
		Endpoint: pythonEndpoint("slowapi_app.py", "CARD_STORAGE=memory"), Profile: "fixed-window:align=first-hit,count-denied=true,query=read"},
	{Name: "pyrate-limiter", Library: "pyrate-limiter Limiter (RedisBucket, SlidingWindowLog)", PyPI: []string{"pyrate-limiter", "redis"},
		Served: "protocol v1 shim on http.server, a RedisBucket per user, 2 instances on one Redis",
		Exec:   "{dir}/python/serve-pyrate", Instances: 2, Shim: []string{"configure"}, Profile: "sliding-log"},
	// The Rust cards (cards/rust, one workspace: Cargo.lock pins the
	// crates); limitador, an RLS server, is with the Envoy cards.
	{Name: "governor", Library: "governor RateLimiter::keyed (GCRA, DashMap, in memory)", Version: "governor 0.10.4 (crates.io)",
		Served: "protocol v1 shim on tiny_http, one keyed limiter, clock control through its Clock trait",
		Serve:  "{dir}/rust/serve", Shim: []string{"configure"}, Scales: []string{"100/1s"}, Profile: "gcra:burst=limit"},
	{Name: "tower-governor", Library: "tower_governor GovernorLayer (governor's keyed GCRA) on axum", Version: "tower_governor 0.8.0 (crates.io)",
		Served:   "endpoint: an axum router behind GovernorLayer, burst_size(5), period(W/5), use_headers(), a KeyExtractor of X-User",
		Endpoint: towerGovernor, Profile: "gcra:burst=limit"},
}

// expressRateLimit are the packages of the express-rate-limit cards.
var expressRateLimit = []string{"express-rate-limit", "rate-limit-redis", "ioredis", "express"}

func byName(n string) (card, bool) {
	for _, c := range cards {
		if c.Name == n {
			return c, true
		}
	}
	return card{}, false
}

// goEndpoint serves a Go card's endpoint (card -endpoint name).
func goEndpoint(name string) func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
	return func(g *grader, redisURL, prefix string, window time.Duration) (string, func(), error) {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", port)
		stop, err := g.process([]string{g.shim, "-endpoint", name, "-window", window.String()}, serviceEnv(port, redisURL, prefix), url)
		return url, stop, err
	}
}

func serviceEnv(port int, redisURL, prefix string) []string {
	return []string{fmt.Sprintf("PORT=%d", port), "RLCONFORM_REDIS_URL=" + redisURL, "RLCONFORM_KEY_PREFIX=" + prefix}
}

func rackAttack(g *grader, redisURL, prefix string, _ time.Duration) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	stop, err := g.process([]string{filepath.Join(g.dir, "ruby", "serve")}, serviceEnv(port, redisURL, prefix), url)
	return url, stop, err
}

// render writes the gateways' template name, executed with data, into dir.
func render(g *grader, name, path string, data any) error {
	text, err := os.ReadFile(filepath.Join(g.dir, "..", "gateways", name))
	if err != nil {
		return err
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// nginx runs gateways/nginx.conf.tmpl as package gateways' tests do.
func nginx(g *grader, _, _ string, _ time.Duration) (string, func(), error) {
	dir, err := os.MkdirTemp(g.tmp, "nginx-")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "html"), 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "html", "ok"), []byte("ok\n"), 0o644); err != nil {
		return "", nil, err
	}
	full, _ := execOutput("/usr/sbin/nginx", "-V")
	temp := []string{"client_body"}
	for _, m := range []string{"proxy", "fastcgi", "uwsgi", "scgi"} {
		if !strings.Contains(full, "--without-http_"+m+"_module") {
			temp = append(temp, m)
		}
	}
	conf := filepath.Join(dir, "nginx.conf")
	data := struct {
		Dir       string
		Port      int
		Rate      string
		Burst     int
		TempPaths []string
	}{dir, port, "5r/s", 4, temp}
	if err := render(g, "nginx.conf.tmpl", conf, data); err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/ok", port)
	stop, err := g.process([]string{"/usr/sbin/nginx", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off; master_process off;"}, nil, url)
	return url, stop, err
}

// haproxy runs gateways/haproxy.cfg.tmpl as package gateways' tests do.
func haproxy(g *grader, _, _ string, _ time.Duration) (string, func(), error) {
	dir, err := os.MkdirTemp(g.tmp, "haproxy-")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	conf := filepath.Join(dir, "haproxy.cfg")
	data := struct {
		Port   int
		Period string
		Limit  int
	}{port, "1s", 5}
	if err := render(g, "haproxy.cfg.tmpl", conf, data); err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	stop, err := g.process([]string{"/usr/sbin/haproxy", "-db", "-f", conf}, nil, url)
	return url, stop, err
}

func execOutput(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}
