// Package reference is rlconform's reference limiter: an exact sliding-window
// log in Redis, one Lua script per decision.
package reference

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

//go:embed sliding.lua
var slidingSource string

// sliding is hashed once; Run tries EVALSHA and falls back to EVAL on NOSCRIPT.
var sliding = redis.NewScript(slidingSource)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "rl:"

// DefaultTimeout bounds every call to Redis when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// Options configure a [Limiter].
type Options struct {
	// MaxRequests is the limit N (>= 1).
	MaxRequests int
	// Window is W (>= 1ms); sub-millisecond parts are dropped.
	Window time.Duration
	// Prefix starts every key; the user id follows in a hash tag, so a
	// user's key is Prefix + "{" + userID + "}". Empty means [DefaultPrefix].
	// It may not hold "{" or "}": the first "{" of a key then ends the
	// prefix, so the key is an injective function of (prefix, id) across
	// prefixes too (with prefix "a:{t}:" allowed, user "bob" would share
	// "a:{t}:{bob}" with user "t}:{bob" of prefix "a:").
	Prefix string
	// Clock, when set, is "now" for every decision (tests use a fake one).
	// When nil, the script reads the Redis server's TIME, so that app
	// instances with skewed clocks share one clock.
	Clock fakeclock.Clock
	// Timeout bounds each call to Redis on top of the caller's context.
	// Zero means [DefaultTimeout]; negative means no bound of our own.
	Timeout time.Duration
	// Rewrite, when set, rewrites the Lua source of a profile's script
	// ([NewProfile]) before it is used: rlconform's mutants plant their
	// faults in the reference this way. Leave it nil.
	Rewrite func(script string) (string, error)
}

// Limiter is an exact sliding-window log limiter on Redis. It implements
// [contract.RateLimiterContract], is safe for concurrent use, and fails
// closed: when Redis cannot answer, AllowRequest returns false and an error
// wrapping [contract.ErrStore].
//
// Typical usage:
//
//	lim, err := reference.New(client, reference.Options{MaxRequests: 100, Window: time.Minute})
//	ok, err := lim.AllowRequest(ctx, userID)
//
// Each allowed request is one ZSET entry under the user's key, with a TTL of
// W refreshed on every allowed request; the key disappears when idle.
type Limiter struct {
	client  redis.UniversalClient
	prefix  string
	clock   fakeclock.Clock
	timeout time.Duration
	cfg     atomic.Pointer[config]
}

type config struct {
	max    int
	window int64 // ms
}

// Decision is the full answer to one request, for callers that want to send
// rate-limit headers.
type Decision struct {
	// Allowed reports whether the request was allowed (and logged).
	Allowed bool
	// Limit is the N in force for this decision.
	Limit int
	// Remaining is how many more requests the user may make now.
	Remaining int
	// RetryAfter is how long until the next request would be allowed; zero
	// while Remaining > 0.
	RetryAfter time.Duration
	// Window is the W in force for this decision.
	Window time.Duration
	// Reset is how long until more quota is available: until the oldest
	// entry that counts leaves (zero with none), what the RateLimit
	// field's t says.
	Reset time.Duration
}

// New returns a limiter on client. It validates the options but does not
// contact Redis.
func New(client redis.UniversalClient, opts Options) (*Limiter, error) {
	if client == nil {
		return nil, errors.New("reference: nil Redis client")
	}
	if err := contract.ValidateConfig(opts.MaxRequests, opts.Window); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("reference: prefix %q holds a brace: keys of two limiters whose prefixes nest could collide", opts.Prefix)
	}
	l := &Limiter{client: client, prefix: opts.Prefix, clock: opts.Clock, timeout: opts.Timeout}
	if l.prefix == "" {
		l.prefix = DefaultPrefix
	}
	if l.timeout == 0 {
		l.timeout = DefaultTimeout
	}
	l.cfg.Store(&config{max: opts.MaxRequests, window: opts.Window.Milliseconds()})
	return l, nil
}

// Key returns the Redis key that holds userID's log.
func (l *Limiter) Key(userID string) string { return l.prefix + "{" + userID + "}" }

// AllowRequest implements [contract.RateLimiterContract].
func (l *Limiter) AllowRequest(ctx context.Context, userID string) (bool, error) {
	d, err := l.run(ctx, "AllowRequest", userID, true, false)
	return d.Allowed, err
}

// Decide decides one request of userID, logs it if allowed, and returns the
// whole decision.
func (l *Limiter) Decide(ctx context.Context, userID string) (Decision, error) {
	return l.run(ctx, "AllowRequest", userID, true, true)
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (l *Limiter) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	d, err := l.run(ctx, "GetRemainingRequests", userID, false, false)
	return d.Remaining, err
}

// Reset implements [contract.RateLimiterContract]: it deletes exactly
// userID's key, never a pattern.
func (l *Limiter) Reset(ctx context.Context, userID string) error {
	if err := contract.ValidateUserID(userID); err != nil {
		return fmt.Errorf("reference: Reset: %w", err)
	}
	err := l.bounded(ctx, func(ctx context.Context) error { return l.client.Del(ctx, l.Key(userID)).Err() })
	if err != nil {
		return fmt.Errorf("reference: Reset(%q): %w: %w", userID, contract.ErrStore, err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract]. The configuration
// lives in this instance: give every instance sharing a store the same one.
func (l *Limiter) Configure(_ context.Context, maxRequests int, window time.Duration) error {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return fmt.Errorf("reference: Configure: %w", err)
	}
	l.cfg.Store(&config{max: maxRequests, window: window.Milliseconds()})
	return nil
}

// run runs the script for one operation; withReset asks it for the
// decision's Reset too, which AllowRequest and remaining queries do not
// need (it costs a lookup).
func (l *Limiter) run(ctx context.Context, op, userID string, record, withReset bool) (Decision, error) {
	if err := contract.ValidateUserID(userID); err != nil {
		return Decision{}, fmt.Errorf("reference: %s: %w", op, err)
	}
	cfg := l.cfg.Load()
	now := ""
	if l.clock != nil {
		now = strconv.FormatInt(l.clock.Now().UnixMilli(), 10)
	}
	rec := "0"
	if record {
		rec = "1"
	}
	var res []int64
	err := l.bounded(ctx, func(ctx context.Context) (err error) {
		res, err = sliding.Run(ctx, l.client, []string{l.Key(userID)}, now, cfg.window, cfg.max, rec, flag(withReset)).Int64Slice()
		return err
	})
	if err != nil {
		return Decision{Limit: cfg.max}, fmt.Errorf("reference: %s(%q): %w: %w", op, userID, contract.ErrStore, err)
	}
	if len(res) != 4 {
		return Decision{Limit: cfg.max}, fmt.Errorf("reference: %s(%q): %w: script answered %v", op, userID, contract.ErrStore, res)
	}
	return Decision{
		Allowed:    res[0] == 1,
		Limit:      cfg.max,
		Remaining:  int(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Millisecond,
		Window:     time.Duration(cfg.window) * time.Millisecond,
		Reset:      time.Duration(res[3]) * time.Millisecond,
	}, nil
}

// bounded runs call with the caller's context, bounded by the limiter's
// timeout, and returns when the context ends even if call has not: a
// go-redis client without ContextTimeoutEnabled waits for its own read
// timeout on an unresponsive server, whatever the context says. An
// abandoned call may still take effect; its caller got an error.
func (l *Limiter) bounded(ctx context.Context, call func(context.Context) error) error {
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
