// Package middleware is net/http rate limiting that tells clients the
// truth: over any limiter that reports its whole decision, it answers a
// refused request with 429, a Retry-After that a client can rely on, and
// the RateLimit and RateLimit-Policy fields of
// draft-ietf-httpapi-ratelimit-headers on every answer. rlconform's
// endpoint mode (rlconform run --endpoint) grades a service behind it.
//
//	lim, _ := reference.New(redisClient, reference.Options{MaxRequests: 100, Window: time.Minute})
//	h := middleware.New(middleware.Reference(lim), middleware.Options{
//		Key: middleware.Header("X-User"),
//	})(api)
package middleware

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/reference"
)

// Decision is a limiter's whole answer to one request.
type Decision struct {
	Allowed bool
	// Limit and Window are the policy in force: N per W.
	Limit  int
	Window time.Duration
	// Remaining is how many more requests the key may make now.
	Remaining int
	// RetryAfter is how long until a request would be allowed (zero while
	// Remaining > 0); Reset how long until more quota is available.
	RetryAfter, Reset time.Duration
}

// Decider decides one request of key.
type Decider func(ctx context.Context, key string) (Decision, error)

// Reference is the reference limiter's decision as a Decider: the ZSET
// log's (reference.New) or the compact log's (reference.NewCompact).
func Reference(l *reference.Limiter) Decider {
	return func(ctx context.Context, key string) (Decision, error) {
		d, err := l.Decide(ctx, key)
		return Decision{Allowed: d.Allowed, Limit: d.Limit, Window: d.Window, Remaining: d.Remaining, RetryAfter: d.RetryAfter, Reset: d.Reset}, err
	}
}

// Options tune the middleware.
type Options struct {
	// Key names the client of a request; an error answers 400 with it.
	Key func(*http.Request) (string, error)
	// Policy names the quota policy in the RateLimit fields (default
	// "default").
	Policy string
	// OnError answers a request the limiter could not decide (its store is
	// down, say); the default fails closed with 503 and a body that says
	// no more ("rate limiter unavailable"), and hands the error to
	// ErrorLog: its text (a store's address, say) is for the operator, not
	// for clients.
	OnError func(http.ResponseWriter, *http.Request, error)
	// ErrorLog receives the errors the default OnError hides from clients,
	// and those of decisions answered as StoreFailure allow or deny (nil:
	// the log package's standard logger).
	ErrorLog *log.Logger
	// StoreFailure is what a request gets when the limiter could not decide
	// it (its store is down, or did not answer within Timeout), the policy
	// rlconform grades (robust/store-outage):
	// contract.StoreFailureError (or "", the default) hands it to OnError,
	// 503 by default; contract.StoreFailureAllow lets it through to the
	// next handler (fail open); contract.StoreFailureDeny refuses it with
	// 429 (fail closed). Neither of the last two sends rate-limit fields:
	// no decision was made. Every such error goes to ErrorLog.
	StoreFailure contract.StoreFailure
	// Timeout, when positive, bounds each decision: one not made by then
	// is a failure of the limiter's store, answered as StoreFailure says
	// (the decider's call goes on with its context cancelled). Without
	// it, a store that hangs (frozen, partitioned) holds each request as
	// long as the store client's own timeouts.
	Timeout time.Duration
}

// Header keys requests by a header, refusing requests without it.
func Header(name string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		if v := r.Header.Get(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("missing %s header", name)
	}
}

// New returns the middleware: each request is decided by decide under its
// key; allowed ones reach next, refused ones get 429. Every answer carries
// RateLimit-Policy ("policy";q=N;w=W in whole seconds, rounded up) and
// RateLimit ("policy";r=remaining;t=seconds until more quota, rounded up);
// a refusal carries Retry-After in delta-seconds, rounded up, so that a
// request sent after it is allowed.
//
// A decision that fails (or, with Options.Timeout, does not come in time)
// is answered as Options.StoreFailure says: 503 by default, the request
// let through (allow), or refused with 429 (deny).
func New(decide Decider, opts Options) func(http.Handler) http.Handler {
	if opts.Policy == "" {
		opts.Policy = "default"
	}
	logger := opts.ErrorLog
	if logger == nil {
		logger = log.Default()
	}
	if opts.OnError == nil {
		opts.OnError = func(w http.ResponseWriter, r *http.Request, err error) {
			logger.Printf("middleware: %s %s: the rate limiter could not decide: %v", r.Method, r.URL.Path, err)
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if opts.Key == nil {
				opts.OnError(w, r, errors.New("middleware: no Options.Key"))
				return
			}
			key, err := opts.Key(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			d, err := bounded(r.Context(), decide, key, opts.Timeout)
			if err != nil {
				switch opts.StoreFailure {
				case contract.StoreFailureAllow:
					logger.Printf("middleware: %s %s: the rate limiter could not decide, the request goes through (fail open): %v", r.Method, r.URL.Path, err)
					w.Header().Set(contract.HeaderStoreFailure, string(contract.StoreFailureAllow))
					next.ServeHTTP(w, r)
				case contract.StoreFailureDeny:
					logger.Printf("middleware: %s %s: the rate limiter could not decide, the request is refused (fail closed): %v", r.Method, r.URL.Path, err)
					w.Header().Set(contract.HeaderStoreFailure, string(contract.StoreFailureDeny))
					http.Error(w, "rate limiter unavailable: request refused", http.StatusTooManyRequests)
				default:
					opts.OnError(w, r, err)
				}
				return
			}
			setFields(w.Header(), opts.Policy, d)
			if !d.Allowed {
				w.Header().Set("Retry-After", strconv.FormatInt(seconds(d.RetryAfter), 10))
				http.Error(w, "too many requests", http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bounded is decide's decision for key, or, when timeout is positive and
// it has not come by then, an error wrapping context.DeadlineExceeded (the
// call goes on, its context cancelled, and its answer is dropped). A
// decider that panics is an error too.
func bounded(ctx context.Context, decide Decider, key string, timeout time.Duration) (Decision, error) {
	if timeout <= 0 {
		return decide(ctx, key)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		d   Decision
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: fmt.Errorf("middleware: the decider panicked: %v", p)}
			}
		}()
		d, err := decide(ctx, key)
		done <- answer{d, err}
	}()
	select {
	case a := <-done:
		return a.d, a.err
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("middleware: no decision within %v: %w", timeout, ctx.Err())
	}
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

func setFields(h http.Header, policy string, d Decision) {
	p := httpsfv.NewItem(policy)
	p.Params.Add("q", int64(d.Limit))
	p.Params.Add("w", seconds(d.Window))
	if v, err := httpsfv.Marshal(httpsfv.List{p}); err == nil {
		h.Set("RateLimit-Policy", v)
	}
	reset := d.Reset
	if !d.Allowed || d.Remaining == 0 {
		reset = max(reset, d.RetryAfter)
	}
	f := httpsfv.NewItem(policy)
	f.Params.Add("r", int64(d.Remaining))
	f.Params.Add("t", seconds(reset))
	if v, err := httpsfv.Marshal(httpsfv.List{f}); err == nil {
		h.Set("RateLimit", v)
	}
}
