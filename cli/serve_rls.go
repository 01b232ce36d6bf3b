package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlconform/rlconform/adapters/rls"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// rlsServe is what serve --rls-mode serves: the limiter (impl reference,
// reference-compact or mutant:NAME), where, which descriptor key names
// the user, under which prefix, and the token it asks for ("" for none).
type rlsServe struct {
	impl, addr, key, prefix, token string
}

// serveRLS serves the limiter as an RLS server on the Redis server's
// clock (real time): the reference's decisions with their state
// (current_limit, limit_remaining, duration_until_reset), a mutant's
// with its code alone.
func serveRLS(ctx context.Context, stdout, stderr io.Writer, s rlsServe, n int, w time.Duration) int {
	decide, store, err := rlsDecider(ctx, s, n, w)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	defer store.Close()
	srv, err := rls.Listen(s.addr, decide, rls.ServerOptions{Key: s.key, Token: s.token})
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	defer srv.Close()
	grade := ""
	if s.token != "" {
		grade = " --rls-header 'authorization: Bearer TOKEN'"
	}
	fmt.Fprintf(stdout, "rlconform: serving %s as an RLS server (envoy.service.ratelimit.v3, gRPC) at %s, limited to %d per %v by the descriptor entry %q of any domain (grade it: rlconform run --rls %s --domain demo --descriptor %s=x --identity descriptor:%s%s)\n",
		s.impl, srv.Addr, n, w, s.key, srv.Addr, s.key, s.key, grade)
	<-ctx.Done()
	return ExitConformant
}

// rlsDecider is the decider serve --rls-mode serves, on a Redis it
// obtains (the caller closes it).
func rlsDecider(ctx context.Context, s rlsServe, n int, w time.Duration) (rls.Decider, *redisenv.Redis, error) {
	if s.impl != "reference" && s.impl != "reference-compact" && !strings.HasPrefix(s.impl, "mutant:") {
		return nil, nil, fmt.Errorf("--rls-mode serves --impl reference, reference-compact or mutant:NAME, not %q", s.impl)
	}
	if strings.HasPrefix(s.impl, "mutant:") {
		lim, store, err := build(ctx, s.impl, fakeclock.Real{}, s.prefix, n, w) // real time: the in-memory mutants need a clock
		if err != nil {
			return nil, nil, err
		}
		return rls.LimiterDecider(lim), store, nil
	}
	store, err := redisenv.Obtain(ctx)
	if err != nil {
		return nil, nil, err
	}
	bound(store, defaultStoreTimeout)
	newLimiter := reference.New
	if s.impl == "reference-compact" {
		newLimiter = reference.NewCompact
	}
	lim, err := newLimiter(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: s.prefix})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return referenceDecider(lim), store, nil
}

// referenceDecider decides with the reference limiter: a unit request
// with its whole decision (duration_until_reset is the delay until more
// quota, and with none left no earlier than the next request would be
// allowed), a weighted one with its code alone.
func referenceDecider(lim *reference.Limiter) rls.Decider {
	return func(ctx context.Context, user string, hits int) (rls.Decision, error) {
		if hits != 1 {
			ok, err := lim.AllowRequestN(ctx, user, hits)
			return rls.Decision{Allowed: ok}, err
		}
		d, err := lim.Decide(ctx, user)
		if err != nil {
			return rls.Decision{}, err
		}
		reset := d.Reset
		if !d.Allowed || d.Remaining == 0 {
			reset = max(reset, d.RetryAfter)
		}
		return rls.Decision{Allowed: d.Allowed, Fields: true, Limit: d.Limit, Window: d.Window, Remaining: d.Remaining, Reset: reset}, nil
	}
}
