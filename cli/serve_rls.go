package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

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
	decide, opts, store, err := rlsDecider(ctx, s, n, w)
	if err != nil {
		fmt.Fprintf(stderr, "rlconform serve: %v\n", err)
		return ExitCannotRun
	}
	defer store.Close()
	opts.Key, opts.Token = s.key, s.token
	srv, err := rls.Listen(s.addr, decide, opts)
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

// rlsUnsetHitsFree is serve --rls-mode's mutant of the RLS server itself:
// the reference behind a server that reads an unset hits_addend as 0,
// not 1 as rls.proto says, so that a request as Envoy's HTTP filter sends
// it costs nothing and is always allowed, with the limit and what is left
// (a weighted one, its cost in the request's or the first descriptor's
// hits_addend, is decided).
const rlsUnsetHitsFree = "mutant:rls-unset-hits-free"

// unsetHitsFree answers OK, for every descriptor and without counting, a
// request whose hits_addend is unset, with current_limit n per w and
// limit_remaining what lim says is left of the user the descriptor's
// entry key names: rlsUnsetHitsFree.
func unsetHitsFree(lim *reference.Limiter, key string, n int, w time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		r, ok := req.(*rlsv3.RateLimitRequest)
		if !ok || r.GetHitsAddend() != 0 || len(r.GetDescriptors()) > 0 && r.GetDescriptors()[0].GetHitsAddend() != nil {
			return next(ctx, req) // a weighted request, in either hits_addend: decided
		}
		resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
		for _, d := range r.GetDescriptors() {
			st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{
				RequestsPerUnit: uint32(n), Unit: rlsv3.RateLimitResponse_RateLimit_SECOND, UnitMultiplier: wrapperspb.UInt32(uint32(w / time.Second))}}
			for _, e := range d.GetEntries() {
				if e.GetKey() != key {
					continue
				}
				left, err := lim.GetRemainingRequests(ctx, e.GetValue())
				if err != nil {
					return nil, status.Error(codes.Unavailable, err.Error())
				}
				st.LimitRemaining = uint32(left)
			}
			resp.Statuses = append(resp.Statuses, st)
		}
		return resp, nil
	}
}

// rlsDecider is the decider serve --rls-mode serves, on a Redis it
// obtains (the caller closes it), and the server's options but its key
// and token: what intercepts its calls (nil but for rlsUnsetHitsFree),
// and, for the reference, the decider of a descriptor's limit override.
// A mutant ignores overrides.
func rlsDecider(ctx context.Context, s rlsServe, n int, w time.Duration) (rls.Decider, rls.ServerOptions, *redisenv.Redis, error) {
	if s.impl != "reference" && s.impl != "reference-compact" && !strings.HasPrefix(s.impl, "mutant:") {
		return nil, rls.ServerOptions{}, nil, fmt.Errorf("--rls-mode serves --impl reference, reference-compact or mutant:NAME, not %q", s.impl)
	}
	if strings.HasPrefix(s.impl, "mutant:") && s.impl != rlsUnsetHitsFree {
		lim, store, err := build(ctx, s.impl, fakeclock.Real{}, s.prefix, n, w) // real time: the in-memory mutants need a clock
		if err != nil {
			return nil, rls.ServerOptions{}, nil, err
		}
		return rls.LimiterDecider(lim), rls.ServerOptions{}, store, nil
	}
	store, err := redisenv.Obtain(ctx)
	if err != nil {
		return nil, rls.ServerOptions{}, nil, err
	}
	bound(store, defaultStoreTimeout)
	newLimiter := reference.New
	if s.impl == "reference-compact" {
		newLimiter = reference.NewCompact
	}
	lim, err := newLimiter(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: s.prefix})
	if err != nil {
		store.Close()
		return nil, rls.ServerOptions{}, nil, err
	}
	if s.impl == rlsUnsetHitsFree {
		return referenceDecider(lim), rls.ServerOptions{Intercept: unsetHitsFree(lim, s.key, n, w)}, store, nil
	}
	o := &overrides{made: map[overrideKey]rls.Decider{}, make: func(n int, w time.Duration) (*reference.Limiter, error) {
		return newLimiter(store.Client, reference.Options{MaxRequests: n, Window: w, Prefix: s.prefix})
	}}
	return referenceDecider(lim), rls.ServerOptions{DecideOverride: o.decide}, store, nil
}

// maxOverrides bounds the configurations of limit overrides a server
// keeps a limiter for: what callers send is untrusted.
const maxOverrides = 256

type overrideKey struct {
	n int
	w time.Duration
}

// overrides decide descriptors' limit overrides with the reference: a
// limiter per configuration, all on one key prefix, so that a user's log
// is one whatever the override, and a changed one keeps its history (as
// envoyproxy/ratelimit's key names no limit).
type overrides struct {
	mu   sync.Mutex
	made map[overrideKey]rls.Decider
	make func(n int, w time.Duration) (*reference.Limiter, error)
}

func (o *overrides) decide(ctx context.Context, user string, hits, n int, w time.Duration) (rls.Decision, error) {
	o.mu.Lock()
	d, ok := o.made[overrideKey{n, w}]
	if !ok && len(o.made) < maxOverrides {
		lim, err := o.make(n, w)
		if err != nil {
			o.mu.Unlock()
			return rls.Decision{}, status.Errorf(codes.InvalidArgument, "a limit override of %d per %v: %v", n, w, err)
		}
		d = referenceDecider(lim)
		o.made[overrideKey{n, w}] = d
	}
	o.mu.Unlock()
	if d == nil {
		return rls.Decision{}, status.Errorf(codes.ResourceExhausted, "more than %d configurations of limit overrides", maxOverrides)
	}
	return d(ctx, user, hits)
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
