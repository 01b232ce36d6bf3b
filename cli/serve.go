package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/redact"
	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

func serve(args []string, stdout, stderr io.Writer, secrets *redact.Secrets) int {
	fs := flag.NewFlagSet("rlconform serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "reference", "what to serve: reference, reference-compact (the sliding log as a LIST of integer ms), model, reference:PROFILE, model:PROFILE (e.g. model:gcra:burst=3), or mutant:NAME ("+mutantNames()+")")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on; off loopback (not 127.0.0.0/8, ::1 or localhost; :8080 and 0.0.0.0 are every interface) it needs --token-file")
	tokenFile := fs.String("token-file", "", "ask every request for Authorization: Bearer and the token in `FILE` (default: $"+envServeToken+"); required off loopback, where anyone reaching the port could configure the limiter and delete its keys")
	limit := fs.Int("limit", 5, "initial limit N")
	window := fs.Duration("window", time.Minute, "initial window W")
	prefix := fs.String("prefix", "rlc-serve:", "key prefix in Redis")
	endpointMode := fs.Bool("endpoint-mode", false, "serve a demo API behind rlconform's net/http middleware over the reference limiter (on Redis TIME; --impl reference-compact: the compact log) instead of protocol v1: 200, or 429 with Retry-After and the RateLimit fields; grade it with rlconform run --endpoint URL --identity header:NAME")
	rlsMode := fs.Bool("rls-mode", false, "serve --impl reference, reference-compact or mutant:NAME (or mutant:rls-unset-hits-free: the reference behind a server that reads an unset hits_addend as 0, a request that costs nothing) as an RLS server (Envoy's rate limit service protocol over gRPC, on Redis TIME) instead of protocol v1: each descriptor with the --rls-key entry is decided for that entry's value, OK or OVER_LIMIT, the reference's with current_limit, limit_remaining and duration_until_reset (its --window in whole seconds); grade it with rlconform run --rls ADDR --domain D --descriptor KEY=x --identity descriptor:KEY (docs/rls.md)")
	rlsKey := fs.String("rls-key", "user", "with --rls-mode: the descriptor entry whose value names the client")
	keyHeader := fs.String("key-header", "X-User", "with --endpoint-mode: the header that names the client")
	storeFailure := fs.String("store-failure", "", "with --endpoint-mode: what a request gets when the limiter cannot decide (its store is down or does not answer within --store-timeout), `POLICY` error (503, the default), allow (let through) or deny (429)")
	storeTimeout := fs.Duration("store-timeout", defaultStoreTimeout, "with --endpoint-mode: the longest a decision may take (the Redis client's dial, read and write timeouts too); past it the request is answered as --store-failure says")
	withClock := fs.Bool("clock", true, "declare clock control and take now from each request's X-Rlc-Now-Ms; -clock=false serves a limiter on real time (the reference and mutants read Redis TIME), graded without clock control")
	if err := fs.Parse(args); err != nil {
		return parseFailed(stderr, "serve", err, false)
	}
	token, err := readToken("--token-file", *tokenFile, envServeToken, secrets)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	if token == "" && !loopback(*addr) {
		fmt.Fprintf(stderr, "rlconform serve: --addr %s listens beyond this machine (not on 127.0.0.0/8, ::1 or localhost), and %s\n"+
			"  refused without a token: give one with --token-file FILE (or $%s), and every request must then carry Authorization: Bearer TOKEN\n"+
			"  (rlconform run --target URL --target-token-file FILE sends it), or listen on loopback: --addr 127.0.0.1:PORT\n",
			*addr, map[bool]string{true: "anyone who reaches it could use the demo API and fill its Redis with keys", false: "anyone who reaches it could configure the limiter and reset it, deleting its keys"}[*endpointMode], envServeToken)
		return ExitCannotRun
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if (set["store-failure"] || set["store-timeout"]) && !*endpointMode {
		fmt.Fprintln(stderr, "rlconform serve: --store-failure and --store-timeout go with --endpoint-mode (over protocol v1 the limiter's own errors are served, 503)")
		return ExitCannotRun
	}
	if *rlsMode {
		if *endpointMode || !*withClock || set["key-header"] {
			fmt.Fprintln(stderr, "rlconform serve: --rls-mode serves on Redis TIME, keyed by --rls-key: --endpoint-mode, --clock and --key-header do not go with it")
			return ExitCannotRun
		}
		return serveRLS(ctx, stdout, stderr, rlsServe{impl: *impl, addr: *addr, key: *rlsKey, prefix: *prefix, token: token}, *limit, *window)
	}
	if set["rls-key"] {
		fmt.Fprintln(stderr, "rlconform serve: --rls-key goes with --rls-mode")
		return ExitCannotRun
	}
	if *endpointMode {
		if *impl != "reference" && *impl != "reference-compact" {
			fmt.Fprintf(stderr, "rlconform serve: --endpoint-mode serves --impl reference or reference-compact, not %q\n", *impl)
			return ExitCannotRun
		}
		policy, err := contract.ParseStoreFailure(*storeFailure)
		if err == nil {
			err = durationIn("--store-timeout", *storeTimeout, maxCallTimeout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
			return ExitCannotRun
		}
		return serveEndpoint(ctx, stdout, stderr, endpointServe{impl: *impl, addr: *addr, keyHeader: *keyHeader, prefix: *prefix, token: token,
			storeFailure: policy, storeTimeout: *storeTimeout}, *limit, *window)
	}
	return serveV1(ctx, stdout, stderr, v1Serve{impl: *impl, addr: *addr, prefix: *prefix, token: token, clock: *withClock}, *limit, *window)
}

// v1Serve is what rlconform serve serves over protocol v1.
type v1Serve struct {
	impl, addr, prefix, token string
	clock                     bool // clock control, from each request's X-Rlc-Now-Ms
}

// serveV1 serves o.impl over protocol v1 until ctx is done.
func serveV1(ctx context.Context, stdout, stderr io.Writer, o v1Serve, limit int, window time.Duration) int {
	clock := fakeclock.New(time.Now())
	var limClock fakeclock.Clock = clock
	if !o.clock {
		clock, limClock = nil, nil
	}
	lim, store, err := build(ctx, o.impl, limClock, o.prefix, limit, window)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	if store != nil {
		defer store.Close()
	}
	// Every limiter serve has takes any window of whole milliseconds.
	srv, err := adapters.ListenWith(o.addr, lim, clock, adapters.ServerOptions{Token: o.token, WindowGranularity: time.Millisecond})
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	fmt.Fprintf(stdout, "rlconform: serving %s over protocol v1 at %s (clock control: %s)\n", o.impl, srv.URL, map[bool]string{true: "yes", false: "no"}[o.clock])
	if o.token != "" {
		fmt.Fprintln(stdout, "rlconform: every request must carry Authorization: Bearer and the token (rlconform run --target URL --target-token-file FILE)")
	}
	if store != nil {
		at := "redis://" + store.Addr
		if redisenv.IsSentinelURL(store.URL) {
			at = redisenv.Redact(store.URL) // the master, through its Sentinels
		}
		fmt.Fprintf(stdout, "rlconform: its keys are in %s under %q (%s): --store-url %s --store-prefix %s\n",
			at, o.prefix, store.Source, at, o.prefix)
	}
	<-ctx.Done()
	srv.Close()
	return ExitConformant
}

// build makes the limiter to serve, and the Redis it uses (nil for the
// model). A nil clock means real time: the server's TIME for Redis
// limiters.
func build(ctx context.Context, impl string, clock fakeclock.Clock, prefix string, n int, w time.Duration) (contract.RateLimiterContract, *redisenv.Redis, error) {
	var profile model.Variant
	if sp, ok := strings.CutPrefix(impl, "model:"); ok || impl == "model" {
		if !ok {
			sp = "" // the sliding log
		}
		spec, err := model.ParseVariant(sp)
		if err != nil {
			return nil, nil, fmt.Errorf("--impl %s: %w", impl, err)
		}
		p, err := spec.New(n, w)
		if err != nil {
			return nil, nil, err
		}
		if clock == nil {
			clock = fakeclock.Real{}
		}
		return model.NewProfileLimiter(clock, p), nil, nil
	}
	var mutant *mutants.Mutant
	compact := impl == "reference-compact"
	if sp, ok := strings.CutPrefix(impl, "reference:"); ok {
		spec, err := model.ParseVariant(sp)
		if err != nil {
			return nil, nil, fmt.Errorf("--impl %s: %w", impl, err)
		}
		profile = spec
	} else if name, ok := strings.CutPrefix(impl, "mutant:"); ok {
		for _, m := range mutants.All() {
			if m.Name == name {
				mutant = &m
			}
		}
		if mutant == nil {
			return nil, nil, fmt.Errorf("unknown mutant %q; known: %s", name, mutantNames())
		}
	} else if impl != "reference" && !compact {
		return nil, nil, fmt.Errorf("unknown --impl %q: want reference, reference-compact, model, reference:PROFILE, model:PROFILE or mutant:NAME", impl)
	}
	store, err := redisenv.Obtain(ctx)
	if err != nil {
		return nil, nil, err
	}
	if mutant == nil {
		bound(store, defaultStoreTimeout)
	}
	var lim contract.RateLimiterContract
	switch {
	case mutant != nil:
		lim, err = mutant.New(mutants.Store{Redis: store.Client, Clock: clock, Prefix: prefix, MaxRequests: n, Window: w})
	case compact:
		lim, err = reference.NewCompact(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: prefix, Clock: clock})
	default:
		lim, err = reference.NewProfile(store.Client, profile, reference.Options{MaxRequests: n, Window: w, Prefix: prefix, Clock: clock})
	}
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return lim, store, nil
}

func mutantNames() string {
	var names []string
	for _, m := range mutants.All() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// endpointServe is what serve --endpoint-mode serves: the limiter (impl
// "reference", or "reference-compact"), where, keyed by which header,
// under which prefix, the token it asks for ("" for none), and what a
// request gets when its store fails, within how long.
type endpointServe struct {
	impl, addr, keyHeader, prefix, token string
	storeFailure                         contract.StoreFailure
	storeTimeout                         time.Duration
}

// serveEndpoint serves a demo API behind the middleware, over the
// reference limiter (impl "reference") or the compact log
// ("reference-compact") on the Redis server's clock.
func serveEndpoint(ctx context.Context, stdout, stderr io.Writer, e endpointServe, n int, w time.Duration) int {
	store, err := redisenv.Obtain(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	defer store.Close()
	var client redis.UniversalClient = store.Client // a cluster's: bounded by the middleware alone
	if c, err := boundedClient(store.URL, e.storeTimeout); err == nil {
		defer c.Close()
		client = c
	}
	newLimiter := reference.New
	if e.impl == "reference-compact" {
		newLimiter = reference.NewCompact
	}
	lim, err := newLimiter(client, reference.Options{MaxRequests: n, Window: w, Prefix: e.prefix})
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	errorLog := log.New(stderr, "rlconform serve: ", 0)
	h := middleware.New(middleware.Reference(lim), middleware.Options{Key: middleware.Header(e.keyHeader), ErrorLog: errorLog,
		StoreFailure: e.storeFailure, Timeout: e.storeTimeout})(api)
	grade := ""
	if e.token != "" {
		h = adapters.RequireToken(e.token, h)
		grade = " --header 'Authorization: Bearer TOKEN'"
	}
	l, err := net.Listen("tcp", e.addr)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	srv := demoServer(h, errorLog)
	go srv.Serve(l)
	if e.storeFailure != contract.StoreFailureError {
		grade += " --store-failure " + string(e.storeFailure)
	}
	fmt.Fprintf(stdout, "rlconform: serving a demo API limited to %d per %v by %s at http://%s/ (grade it: rlconform run --endpoint http://%s/ --identity header:%s%s)\n",
		n, w, e.keyHeader, l.Addr(), l.Addr(), e.keyHeader, grade)
	<-ctx.Done()
	srv.Close()
	return ExitConformant
}

// defaultStoreTimeout is serve's --store-timeout by default, and how long
// the reference it serves over protocol v1 or RLS waits on its Redis.
const defaultStoreTimeout = 500 * time.Millisecond

// bound gives store a client whose every call ends within timeout
// (boundedClient), so that the reference answers an error wrapping
// contract.ErrStore (over protocol v1: 503) while its Redis is stopped or
// frozen, within robust/store-outage's store timeout, as its capabilities
// declare; measured: with the default client a call to a stopped Redis
// went unanswered for 1.5 s (go-redis retries the dial). A cluster keeps
// its client.
func bound(store *redisenv.Redis, timeout time.Duration) {
	if c, err := boundedClient(store.URL, timeout); err == nil {
		store.Client.Close()
		store.Client = c
	}
}

// boundedClient is a client of the Redis at url whose every call ends
// within timeout (dial, read and write), dialling once and never retrying:
// the demo API answers as its store-failure policy says within it.
func boundedClient(url string, timeout time.Duration) (*redis.Client, error) {
	if redisenv.IsSentinelURL(url) {
		opts, err := redisenv.ParseSentinelURL(url)
		if err != nil {
			return nil, fmt.Errorf("the Sentinel URL: %w", err)
		}
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
		opts.MaxRetries, opts.ContextTimeoutEnabled = -1, true
		return redis.NewFailoverClient(opts), nil
	}
	if strings.Contains(url, ",") {
		return nil, errors.New("a cluster: one client per node")
	}
	if !strings.Contains(url, "://") {
		url = "redis://" + url
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("the Redis URL: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled = -1, 1, true
	return redis.NewClient(opts), nil
}

// maxDemoBody bounds what the demo API reads of a request's body.
const maxDemoBody = 64 << 10

// demoServer is the HTTP server of the demo API: bounded in what a client
// can make it hold, headers, body and time alike, as adapters.Listen's
// protocol server is.
func demoServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{Handler: http.MaxBytesHandler(h, maxDemoBody), ErrorLog: errorLog,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
}
