// Package reference is rlconform's reference limiter: an exact sliding-window
// log in Redis, one Lua script per decision ([New], or the compact log of
// [NewCompact]), and the exact Redis implementation of every other profile
// ([NewProfile]).
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
	"github.com/rlconform/rlconform/internal/luaprelude"
)

//go:embed sliding.lua
var slidingBody string

// slidingSource is the script Redis runs: the prelude, then the file.
var slidingSource = luaprelude.Source(slidingBody)

// sliding is hashed once; Run tries EVALSHA and falls back to EVAL on NOSCRIPT.
var sliding = redis.NewScript(slidingSource)

// slidingHash is sliding's SHA1, boxed once for EVALSHA's arguments.
var slidingHash any = sliding.Hash()

//go:embed compact.lua
var compactBody string

// compactSource, compact and compactHash are the compact log's script
// ([NewCompact]), as slidingSource, sliding and slidingHash are the ZSET's.
var (
	compactSource     = luaprelude.Source(compactBody)
	compact           = redis.NewScript(compactSource)
	compactHash   any = compact.Hash()
)

// logScript is the script a [Limiter] decides with: the ZSET log's or the
// compact LIST's. Both take the same arguments and give the same answer.
type logScript struct {
	script *redis.Script
	source string
	hash   any
}

var (
	zsetLog    = &logScript{sliding, slidingSource, slidingHash}
	compactLog = &logScript{compact, compactSource, compactHash}
)

// logScriptOf is the log script whose SHA1 is hash (EVALSHA's second
// argument), for the EVAL that follows a NOSCRIPT.
func logScriptOf(hash any) *logScript {
	if hash == compactHash {
		return compactLog
	}
	return zsetLog
}

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
	// instances with skewed clocks share one clock. Leave it nil in
	// production: a clock is read before the call, so concurrent calls
	// reach Redis out of order, time steps back for the log, and more than
	// N get through in real time (rlconform bench measured 101 of 100
	// allowed within 293 ms with the real clock here, 16 callers).
	Clock fakeclock.Clock
	// Timeout bounds each call to Redis on top of the caller's context.
	// Zero means [DefaultTimeout]; negative means no bound of our own.
	//
	// A client that bounds its own calls by their context's deadline (a
	// *redis.Client, *redis.ClusterClient or *redis.Ring with
	// ContextTimeoutEnabled, as package redisenv's are) is called directly.
	// Any other client is called on a goroutine of its own, abandoned when
	// the context ends: without ContextTimeoutEnabled, go-redis waits for
	// its own read timeout however the context ends. On the first kind, a
	// context cancelled without a deadline ends a call in flight only at
	// the Timeout (or the client's read timeout when Timeout is negative).
	Timeout time.Duration
}

// Limiter is an exact sliding-window log limiter on Redis. It implements
// [contract.CostLimiter], is safe for concurrent use, and fails
// closed: when Redis cannot answer, AllowRequest returns false and an error
// wrapping [contract.ErrStore].
//
// Typical usage:
//
//	lim, err := reference.New(client, reference.Options{MaxRequests: 100, Window: time.Minute})
//	ok, err := lim.AllowRequest(ctx, userID)
//
// Each allowed request is one ZSET entry under the user's key (one LIST
// entry with [NewCompact]), with a TTL of W refreshed on every allowed
// request; the key disappears when idle.
type Limiter struct {
	client  redis.UniversalClient
	prefix  string
	clock   fakeclock.Clock
	timeout time.Duration
	// direct: the client ends its calls at their context's deadline, so
	// they need no goroutine of their own (see Options.Timeout).
	direct bool
	cfg    atomic.Pointer[config]
	// log is the script of every decision: the ZSET's ([New]) or the
	// compact LIST's ([NewCompact]).
	log *logScript
}

var _ contract.CostLimiter = (*Limiter)(nil)

// config is the configuration in force. The profiles store configs of
// their own, without the script arguments they do not use.
type config struct {
	max    int
	window int64 // ms
	// maxArg and windowArg are max and window as the script's arguments:
	// decimal strings, boxed once.
	maxArg, windowArg any
}

func newConfig(max int, window time.Duration) *config {
	ms := window.Milliseconds()
	return &config{max: max, window: ms, maxArg: strconv.Itoa(max), windowArg: strconv.FormatInt(ms, 10)}
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
	return newLimiter(client, opts, zsetLog)
}

// NewCompact returns the compact sliding log: a [Limiter] with the same
// contract, keys, hash tags, TTL rule, clock and methods as [New]'s (Decide,
// AllowRequests and the middleware included), whose log is a Redis LIST of
// integer milliseconds instead of a ZSET. Allowed requests are pushed at
// the tail and expired ones trimmed from the head, so that the log stays
// in time order; a request made earlier than the newest entry (a clock
// that stepped back, an instance whose clock is behind another's) is put
// in its place. A LIST stores each 13-digit millisecond as a listpack
// integer: about 10 bytes of Redis per logged request at any length, where
// the ZSET takes about 24 up to 128 entries and 100 to 130 beyond
// (docs/performance.md). Entries later than now count at once (the
// contract's conservative reading), where the ZSET's count them once time
// reaches them (the literal one); both are exact under the contract. Opts
// are [New]'s; Rewrite is not used.
//
// Choose it for long logs (limits in the hundreds or more per window),
// where memory is the cost; a user's log of either kind holds its own
// entries only, so the two must not share a prefix.
func NewCompact(client redis.UniversalClient, opts Options) (*Limiter, error) {
	return newLimiter(client, opts, compactLog)
}

func newLimiter(client redis.UniversalClient, opts Options, log *logScript) (*Limiter, error) {
	if client == nil {
		return nil, errors.New("reference: nil Redis client")
	}
	if err := contract.ValidateConfig(opts.MaxRequests, opts.Window); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("reference: prefix %q holds a brace: keys of two limiters whose prefixes nest could collide", opts.Prefix)
	}
	l := &Limiter{client: client, prefix: opts.Prefix, clock: opts.Clock, timeout: opts.Timeout, direct: boundsByDeadline(client), log: log}
	if l.prefix == "" {
		l.prefix = DefaultPrefix
	}
	if l.timeout == 0 {
		l.timeout = DefaultTimeout
	}
	l.cfg.Store(newConfig(opts.MaxRequests, opts.Window))
	return l, nil
}

// boundsByDeadline reports whether client is a go-redis client with
// ContextTimeoutEnabled: one whose calls end at their context's deadline.
func boundsByDeadline(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Key returns the Redis key that holds userID's log.
func (l *Limiter) Key(userID string) string { return l.prefix + "{" + userID + "}" }

// AllowRequest implements [contract.RateLimiterContract].
func (l *Limiter) AllowRequest(ctx context.Context, userID string) (bool, error) {
	d, err := l.run(ctx, "AllowRequest", userID, 1, true, false)
	return d.Allowed, err
}

// AllowRequestN implements [contract.CostLimiter]: a request of cost n is
// allowed when n more entries fit (active entries + n <= N), and then
// logs n entries at now; refused, it logs nothing. A cost of 0 writes
// nothing and is allowed (as the model answers); a cost above N is
// refused; a negative one returns an error wrapping
// [contract.ErrInvalidCost]. Logging n entries is O(n log N) in Redis
// (O(n) with [NewCompact]).
func (l *Limiter) AllowRequestN(ctx context.Context, userID string, n int) (bool, error) {
	if err := contract.ValidateCost(n); err != nil {
		return false, fmt.Errorf("reference: AllowRequestN: %w", err)
	}
	d, err := l.run(ctx, "AllowRequestN", userID, n, true, false)
	return d.Allowed, err
}

// Decide decides one request of userID, logs it if allowed, and returns the
// whole decision.
func (l *Limiter) Decide(ctx context.Context, userID string) (Decision, error) {
	return l.run(ctx, "AllowRequest", userID, 1, true, true)
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (l *Limiter) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	d, err := l.run(ctx, "GetRemainingRequests", userID, 1, false, false)
	return d.Remaining, err
}

// Reset implements [contract.RateLimiterContract]: it deletes exactly
// userID's key, never a pattern.
func (l *Limiter) Reset(ctx context.Context, userID string) error {
	if err := contract.ValidateUserID(userID); err != nil {
		return fmt.Errorf("reference: Reset: %w", err)
	}
	if _, err := boundedCall(l, ctx, del, l.Key(userID)); err != nil {
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
	l.cfg.Store(newConfig(maxRequests, window))
	return nil
}

// run runs the script for one operation, a request of cost n (n >= 0);
// withReset asks it for the decision's Reset too, which AllowRequest and
// remaining queries do not need (it costs a lookup).
func (l *Limiter) run(ctx context.Context, op, userID string, n int, record, withReset bool) (Decision, error) {
	if err := contract.ValidateUserID(userID); err != nil {
		return Decision{}, fmt.Errorf("reference: %s: %w", op, err)
	}
	cfg := l.cfg.Load()
	args := l.scriptArgs(cfg, userID, l.now(), record, withReset)
	if n != 1 {
		args = append(args, strconv.Itoa(n)) // ARGV[6]; absent, a unit request
	}
	vals, err := boundedCall(l, ctx, evalSliding, args)
	if err != nil {
		return Decision{Limit: cfg.max}, fmt.Errorf("reference: %s(%q): %w: %w", op, userID, contract.ErrStore, err)
	}
	res, ok := scriptAnswer(vals)
	if !ok {
		return Decision{Limit: cfg.max}, fmt.Errorf("reference: %s(%q): %w: script answered %v", op, userID, contract.ErrStore, vals)
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

// now is the script's "now" argument: the clock's, or "" for the server's
// TIME.
func (l *Limiter) now() any {
	if l.clock == nil {
		return ""
	}
	return strconv.FormatInt(l.clock.Now().UnixMilli(), 10)
}

// evalsha is one EVALSHA command of the sliding script: its arguments and
// the key that args[3] points to (go-redis sends a *string as the string),
// in one allocation.
type evalsha struct {
	args [9]any
	key  string
}

// scriptArgs is the whole EVALSHA command of one decision of userID. The
// other arguments are constants or boxed once in the config, but for a
// clock's now.
func (l *Limiter) scriptArgs(cfg *config, userID string, now any, record, withReset bool) []any {
	c := &evalsha{key: l.Key(userID)}
	c.args = [9]any{"evalsha", l.log.hash, "1", &c.key, now, cfg.windowArg, cfg.maxArg, flagArg(record), flagArg(withReset)}
	return c.args[:]
}

// flagArg is flag(b), boxed without allocating.
func flagArg(b bool) any {
	if b {
		return "1"
	}
	return "0"
}

// evalSliding sends args, an EVALSHA of a log script, and sends it again
// as an EVAL when the server does not have the script, as Script.Run does.
func evalSliding(ctx context.Context, client redis.UniversalClient, args []any) ([]any, error) {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = client.Process(ctx, cmd)
	if isNoScript(cmd.Err()) {
		args[0], args[1] = "eval", logScriptOf(args[1]).source // the first command is done with args
		cmd = redis.NewCmd(ctx, args...)
		cmd.SetFirstKeyPos(3)
		_ = client.Process(ctx, cmd)
	}
	return cmd.Slice()
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// scriptAnswer reads the script's {allowed, remaining, retry_after_ms,
// reset_ms}.
func scriptAnswer(vals []any) (res [4]int64, ok bool) {
	if len(vals) != len(res) {
		return res, false
	}
	for i, v := range vals {
		if res[i], ok = v.(int64); !ok {
			return res, false
		}
	}
	return res, true
}

func del(ctx context.Context, client redis.UniversalClient, key string) (int64, error) {
	return client.Del(ctx, key).Result()
}

// boundedCall returns call(ctx, l.client, arg), with ctx bounded by the
// limiter's Timeout unless its own deadline comes first. On a client that
// does not end its calls at their context's deadline (see
// Options.Timeout), call runs on a goroutine of its own and boundedCall
// returns as soon as the context ends, even if call has not. An abandoned
// call may still take effect; its caller got an error.
func boundedCall[A, T any](l *Limiter, ctx context.Context, call func(context.Context, redis.UniversalClient, A) (T, error), arg A) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	bctx, cancel := l.withTimeout(ctx)
	defer cancel()
	if l.direct {
		return call(bctx, l.client, arg)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(bctx, l.client, arg)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-bctx.Done():
		return zero, bctx.Err()
	}
}

// withTimeout bounds ctx by the limiter's Timeout, unless ctx's own
// deadline comes first: then ctx is used as it is.
func (l *Limiter) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout > 0 {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > l.timeout {
			return context.WithTimeout(ctx, l.timeout)
		}
	}
	return ctx, func() {}
}

// bounded is boundedCall for a call of any kind (the profiles' scripts).
func (l *Limiter) bounded(ctx context.Context, call func(context.Context) error) error {
	_, err := boundedCall(l, ctx, callFunc, call)
	return err
}

func callFunc(ctx context.Context, _ redis.UniversalClient, call func(context.Context) error) (struct{}, error) {
	return struct{}{}, call(ctx)
}
