// Command card serves one rate-limiting library for rlconform, the
// library's own way: over protocol v1 through a thin shim (every decision
// is the library's; the shim only translates calls), or as an HTTP
// endpoint behind the library's own middleware.
//
//	card redis_rate            # protocol v1 on 127.0.0.1:$PORT
//	card -endpoint ulule-stdlib  # GET / behind ulule/limiter's middleware, X-User the key
//	card -endpoint fiber2-sliding  # GET / behind Fiber v2's limiter (in memory), served by Fiber
//
// The environment is what rlconform run --exec gives: PORT,
// RLCONFORM_REDIS_URL and RLCONFORM_KEY_PREFIX (every key under it).
// docs/cards.md says what each card shows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// A shim is one library behind the contract's four operations.
type shim struct {
	// clock, when true, gives the library the fake clock that protocol
	// v1's X-Rlc-Now-Ms sets: only where the library itself takes a clock.
	clock bool
	// redis says the library keeps its state in Redis.
	redis bool
	// noReset says the library has no call that forgets a key: the card
	// declares no reset, and the specs that need one are skipped;
	// noRemaining, that it has no read of what is left.
	noReset, noRemaining bool
	// make builds the limiter on env.
	make func(env *env) (contractLimiter, error)
}

// env is what a shim is built on.
type env struct {
	rdb    *redis.Client
	prefix string
	clock  *fakeclock.Fake // nil without clock control
	limit  int
	window time.Duration
}

// shims are the protocol v1 cards, by name.
var shims = map[string]shim{
	"redis_rate":         {redis: true, make: newRedisRate},
	"ulule-redis":        {redis: true, make: newUlule},
	"go-zero-period":     {redis: true, noReset: true, noRemaining: true, make: newGoZeroPeriod},
	"go-zero-token":      {redis: true, noReset: true, noRemaining: true, make: newGoZeroToken},
	"throttled-goredis":  {redis: true, noReset: true, make: newThrottledRedis},
	"throttled-memstore": {clock: true, noReset: true, make: newThrottledMem},
	"sethvargo-memory":   {noReset: true, make: newSethvargo},
	"x-time-rate":        {clock: true, make: newXTime},
	"reference":          {clock: true, redis: true, make: newReference},
}

func main() {
	endpoint := flag.String("endpoint", "", "serve an HTTP endpoint behind this library's middleware instead (ulule-stdlib, throttled-http, reference-middleware, fiber2-fixed, fiber2-sliding, fiber3-fixed, fiber3-sliding)")
	limit := flag.Int("limit", 5, "with -endpoint: the limit N")
	window := flag.Duration("window", time.Second, "with -endpoint: the window W")
	flag.Usage = func() {
		names := make([]string, 0, len(shims))
		for n := range shims {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(flag.CommandLine.Output(), "usage: card NAME | card -endpoint NAME\nNAME: %v\n", names)
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*endpoint, *limit, *window); err != nil {
		fmt.Fprintln(os.Stderr, "card:", err)
		os.Exit(1)
	}
}

func run(endpoint string, limit int, window time.Duration) error {
	port := os.Getenv("PORT")
	if port == "" {
		return errors.New("PORT is not set")
	}
	e := &env{prefix: os.Getenv("RLCONFORM_KEY_PREFIX"), limit: limit, window: window}
	if u := os.Getenv("RLCONFORM_REDIS_URL"); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return fmt.Errorf("RLCONFORM_REDIS_URL: %w", err)
		}
		// A store that is down answers at once (503), one that hangs
		// within the store timeout rlconform grades (1s), and the client
		// reconnects when it is back.
		opt.MaxRetries, opt.DialerRetries = -1, 1
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		e.rdb = redis.NewClient(opt)
		defer e.rdb.Close()
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, ok := fiberEndpoints[endpoint]; ok {
		return serveFiber(ctx, endpoint, addr, e)
	}
	if endpoint != "" {
		h, err := endpoints(endpoint, e)
		if err != nil {
			return err
		}
		return serve(ctx, addr, h)
	}
	if flag.NArg() != 1 {
		flag.Usage()
		return errors.New("name one card")
	}
	s, ok := shims[flag.Arg(0)]
	if !ok {
		flag.Usage()
		return fmt.Errorf("no card %q", flag.Arg(0))
	}
	if s.redis && e.rdb == nil {
		return fmt.Errorf("%s keeps its state in Redis: RLCONFORM_REDIS_URL is not set", flag.Arg(0))
	}
	if s.clock {
		e.clock = fakeclock.New(time.Now())
	}
	lim, err := s.make(e)
	if err != nil {
		return fmt.Errorf("%s: %w", flag.Arg(0), err)
	}
	h := adapters.Handler(lim, e.clock)
	_, cost := lim.(contract.CostLimiter)
	if s.noReset || s.noRemaining {
		h = without(h, e.clock != nil, cost, !s.noRemaining)
	}
	return serve(ctx, addr, h)
}

// serve serves h on addr until ctx is done.
func serve(ctx context.Context, addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", addr, err)
	}
	return nil
}

// errNoReset is the answer of a library with no call that forgets a key.
var errNoReset = errors.New("this library has no call that forgets a key")

// without declares the capabilities of h less reset, and less remaining
// unless remaining (cost: the library takes a weight, as adapters.Handler
// declares it).
func without(h http.Handler, clock, cost, remaining bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == adapters.PathCapabilities {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"clock":%t,"configure":true,"remaining":%t,"reset":false,"cost":%t}`+"\n", clock, remaining, cost)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// now is the instant the library decides at, where it takes one.
func (e *env) now() time.Time {
	if e.clock != nil {
		return e.clock.Now()
	}
	return time.Now()
}

// checkUser is the contract's one rule on ids that no library checks.
func checkUser(u string) error {
	if u == "" {
		return contract.ErrInvalidUserID
	}
	return nil
}

// storeErr marks a library's error as a store failure (503).
func storeErr(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, contract.ErrStore, err)
}

// contractLimiter is what every shim is.
type contractLimiter = contract.RateLimiterContract

// endpoints are the middleware cards, by name.
func endpoints(name string, e *env) (http.Handler, error) {
	if e.rdb == nil {
		return nil, fmt.Errorf("%s keeps its state in Redis: RLCONFORM_REDIS_URL is not set", name)
	}
	switch name {
	case "ulule-stdlib":
		return ululeStdlib(e)
	case "throttled-http":
		return throttledHTTP(e)
	case "reference-middleware":
		return referenceMiddleware(e)
	case "echo":
		return echoLimiter(e)
	}
	return nil, fmt.Errorf("no endpoint card %q (ulule-stdlib, throttled-http, reference-middleware, echo)", name)
}
