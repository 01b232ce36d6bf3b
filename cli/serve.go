package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/middleware"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlconform serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	impl := fs.String("impl", "reference", "what to serve: reference, reference-compact (the sliding log as a LIST of integer ms), model, reference:PROFILE, model:PROFILE (e.g. model:gcra:burst=3), or mutant:NAME ("+mutantNames()+")")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	limit := fs.Int("limit", 5, "initial limit N")
	window := fs.Duration("window", time.Minute, "initial window W")
	prefix := fs.String("prefix", "rlc-serve:", "key prefix in Redis")
	endpointMode := fs.Bool("endpoint-mode", false, "serve a demo API behind rlconform's net/http middleware over the reference limiter (on Redis TIME; --impl reference-compact: the compact log) instead of protocol v1: 200, or 429 with Retry-After and the RateLimit fields; grade it with rlconform run --endpoint URL --identity header:NAME")
	keyHeader := fs.String("key-header", "X-User", "with --endpoint-mode: the header that names the client")
	withClock := fs.Bool("clock", true, "declare clock control and take now from each request's X-Rlc-Now-Ms; -clock=false serves a limiter on real time (the reference and mutants read Redis TIME), graded without clock control")
	if err := fs.Parse(args); err != nil {
		return parseFailed(stderr, "serve", err, false)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *endpointMode {
		if *impl != "reference" && *impl != "reference-compact" {
			fmt.Fprintf(stderr, "rlconform serve: --endpoint-mode serves --impl reference or reference-compact, not %q\n", *impl)
			return ExitCannotRun
		}
		return serveEndpoint(ctx, stdout, stderr, *impl, *addr, *keyHeader, *prefix, *limit, *window)
	}
	clock := fakeclock.New(time.Now())
	var limClock fakeclock.Clock = clock
	if !*withClock {
		clock, limClock = nil, nil
	}
	lim, store, err := build(ctx, *impl, limClock, *prefix, *limit, *window)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	if store != nil {
		defer store.Close()
	}
	srv, err := adapters.Listen(*addr, lim, clock)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	fmt.Fprintf(stdout, "rlconform: serving %s over protocol v1 at %s (clock control: %s)\n", *impl, srv.URL, map[bool]string{true: "yes", false: "no"}[*withClock])
	if store != nil {
		fmt.Fprintf(stdout, "rlconform: its keys are in redis://%s under %q (%s): --store-url redis://%s --store-prefix %s\n",
			store.Addr, *prefix, store.Source, store.Addr, *prefix)
	}
	<-ctx.Done()
	srv.Close()
	return ExitConformant
}

// build makes the limiter to serve, and the Redis it uses (nil for the
// model). A nil clock means real time: the server's TIME for Redis
// limiters.
func build(ctx context.Context, impl string, clock fakeclock.Clock, prefix string, n int, w time.Duration) (contract.RateLimiterContract, *redisenv.Redis, error) {
	var profile model.Spec
	if sp, ok := strings.CutPrefix(impl, "model:"); ok || impl == "model" {
		if !ok {
			sp = "" // the sliding log
		}
		spec, err := model.ParseSpec(sp)
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
		spec, err := model.ParseSpec(sp)
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

// serveEndpoint serves a demo API behind the middleware, over the
// reference limiter (impl "reference") or the compact log
// ("reference-compact") on the Redis server's clock.
func serveEndpoint(ctx context.Context, stdout, stderr io.Writer, impl, addr, keyHeader, prefix string, n int, w time.Duration) int {
	store, err := redisenv.Obtain(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	defer store.Close()
	newLimiter := reference.New
	if impl == "reference-compact" {
		newLimiter = reference.NewCompact
	}
	lim, err := newLimiter(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: prefix})
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	h := middleware.New(middleware.Reference(lim), middleware.Options{Key: middleware.Header(keyHeader)})(api)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	fmt.Fprintf(stdout, "rlconform: serving a demo API limited to %d per %v by %s at http://%s/ (grade it: rlconform run --endpoint http://%s/ --identity header:%s)\n",
		n, w, keyHeader, l.Addr(), l.Addr(), keyHeader)
	<-ctx.Done()
	srv.Close()
	return ExitConformant
}
