package reference

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/luaprelude"
	"github.com/rlconform/rlconform/internal/scripthook"
	"github.com/rlconform/rlconform/model"
)

//go:embed fixed-window.lua
var fixedWindowBody string

//go:embed sliding-counter.lua
var slidingCounterBody string

//go:embed gcra.lua
var gcraBody string

//go:embed token-bucket.lua
var tokenBucketBody string

// The profiles' scripts as Redis runs them: the prelude, then the file.
var (
	fixedWindowSource    = luaprelude.Source(fixedWindowBody)
	slidingCounterSource = luaprelude.Source(slidingCounterBody)
	gcraSource           = luaprelude.Source(gcraBody)
	tokenBucketSource    = luaprelude.Source(tokenBucketBody)
)

// The profile scripts, hashed once; Run tries EVALSHA and falls back to EVAL.
var (
	fixedWindowScript    = redis.NewScript(fixedWindowSource)
	slidingCounterScript = redis.NewScript(slidingCounterSource)
	gcraScript           = redis.NewScript(gcraSource)
	tokenBucketScript    = redis.NewScript(tokenBucketSource)
)

// ExactBound is the largest product of a configuration the profile scripts
// compute with: 2^52. Redis runs Lua with double-precision numbers, whole
// numbers exact up to 2^53; keeping every compared quantity at most 2^52
// leaves room for one sum. NewProfile and Configure refuse, with an error
// wrapping [contract.ErrInvalidConfig], a configuration that would pass it:
//
//   - sliding-counter: N*W (W in ms);
//   - gcra: B*W, and N (B the burst, N by default);
//   - token-bucket: C*W, and N (C the capacity, N by default).
//
// Fixed windows have no products. For scale: with W = 100 years N may be
// up to 1427; with W = 30 days, up to 1.7 million; with W = 1 minute, up to
// 75 billion.
const ExactBound = 1 << 52

// NewProfile returns a Redis limiter implementing the profile spec exactly
// as its model (model.Spec.New) decides, one Lua script per decision: the
// sliding log is [New]; fixed windows (align=epoch, go-zero, first-grid, first-hit,
// count-denied, query), the two-window weighted counter (align, count-denied,
// admit), GCRA and token buckets
// (refill, expire, query) keep one HASH per user under
// opts.Prefix + "{" + userID + "}", with a TTL renewed on every write: the
// time the model says the state still matters (its Lifetime), plus one
// window of slack (a state read past its lifetime answers as a fresh one,
// so the slack only keeps a given clock running ahead of the server's from
// losing a state that still counts).
//
// Configure applies N and W to every later decision, reading the stored
// state as the model's Configure says (a state written under a shorter
// window may expire with its TTL before a raised window would forget it,
// as with [Limiter]). Like [Limiter], the limiter fails closed, bounds
// every call by its context and opts.Timeout, and reads "now" from
// opts.Clock, or the Redis server's TIME when it is nil.
func NewProfile(client redis.UniversalClient, spec model.Spec, opts Options) (contract.RateLimiterContract, error) {
	// rlconform's mutants plant their faults in the script this way.
	var rewrite func(string) (string, error)
	if h, ok := client.(scripthook.Client); ok {
		client, rewrite = h.UniversalClient, h.Rewrite
	}
	if spec.IsSlidingLog() {
		return New(client, opts)
	}
	full, err := model.ParseSpec(spec.String())
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	base, err := New(client, opts)
	if err != nil {
		return nil, err
	}
	p := &profileLimiter{base: base, spec: full}
	switch full.Name {
	case model.ProfileFixedWindow:
		p.script, p.source = fixedWindowScript, fixedWindowSource
		p.fixedArgs = []any{full.Params["align"], flag(full.Params["count-denied"] == "true"), full.Params["query"]}
	case model.ProfileSlidingCounter:
		p.script, p.source = slidingCounterScript, slidingCounterSource
		p.fixedArgs = []any{flag(full.Params["count-denied"] == "true"), full.Params["align"], full.Params["admit"]}
	case model.ProfileGCRA:
		p.script, p.source = gcraScript, gcraSource
		p.param = paramOf(full.Params["burst"])
	case model.ProfileTokenBucket:
		p.script, p.source = tokenBucketScript, tokenBucketSource
		p.param = paramOf(full.Params["capacity"])
		p.fixedArgs = []any{full.Params["refill"], full.Params["expire"], full.Params["query"]}
	default:
		return nil, fmt.Errorf("reference: profile %q has no Redis implementation", full.Name)
	}
	if rewrite != nil {
		src, err := rewrite(p.source)
		if err != nil {
			return nil, fmt.Errorf("reference: rewriting the %s script: %w", full.Name, err)
		}
		p.script = redis.NewScript(src)
	}
	if err := p.check(opts.MaxRequests, opts.Window.Milliseconds()); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	p.name = "reference: " + full.String()
	return p, nil
}

// profileLimiter is the Redis implementation of a profile other than the
// sliding log. base holds the client, prefix, clock, timeout and the
// configuration in force.
type profileLimiter struct {
	base      *Limiter
	spec      model.Spec
	name      string
	script    *redis.Script
	source    string // the script's Lua
	param     int64  // gcra: the burst; token-bucket: the capacity; 0 = N
	fixedArgs []any  // the script's arguments after the common ones
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// paramOf is a whole-number parameter, 0 for "limit".
func paramOf(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// sized is the profile's burst or capacity under the limit n.
func (p *profileLimiter) sized(n int64) int64 {
	if p.param > 0 {
		return p.param
	}
	return n
}

// check refuses a configuration the scripts could not compute exactly (see
// [ExactBound]).
func (p *profileLimiter) check(n int, w int64) error {
	if err := contract.ValidateConfig(n, time.Duration(w)*time.Millisecond); err != nil {
		return err
	}
	over := func(what string, a, b int64) error {
		if a > ExactBound/b {
			return fmt.Errorf("%w: %s = %d×%d is above 2^52, the largest this %s limiter computes exactly",
				contract.ErrInvalidConfig, what, a, b, p.spec.Name)
		}
		return nil
	}
	nn := int64(n)
	switch p.spec.Name {
	case model.ProfileSlidingCounter:
		return over("N×W", nn, w)
	case model.ProfileGCRA:
		return errors.Join(over("B×W", p.sized(nn), w), over("N", nn, 1))
	case model.ProfileTokenBucket:
		return errors.Join(over("C×W", p.sized(nn), w), over("N", nn, 1))
	}
	return nil
}

// Key returns the Redis key that holds userID's state.
func (p *profileLimiter) Key(userID string) string { return p.base.Key(userID) }

// AllowRequest implements [contract.RateLimiterContract].
func (p *profileLimiter) AllowRequest(ctx context.Context, userID string) (bool, error) {
	ok, _, err := p.run(ctx, "AllowRequest", userID, true)
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (p *profileLimiter) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	_, n, err := p.run(ctx, "GetRemainingRequests", userID, false)
	return n, err
}

// Reset implements [contract.RateLimiterContract]: it deletes exactly
// userID's key.
func (p *profileLimiter) Reset(ctx context.Context, userID string) error {
	return p.base.Reset(ctx, userID)
}

// Configure implements [contract.RateLimiterContract]. The configuration
// lives in this instance: give every instance sharing a store the same one.
func (p *profileLimiter) Configure(_ context.Context, maxRequests int, window time.Duration) error {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return fmt.Errorf("reference: Configure: %w", err)
	}
	if err := p.check(maxRequests, window.Milliseconds()); err != nil {
		return fmt.Errorf("reference: Configure: %w", err)
	}
	p.base.cfg.Store(&config{max: maxRequests, window: window.Milliseconds()})
	return nil
}

func (p *profileLimiter) run(ctx context.Context, op, userID string, record bool) (bool, int, error) {
	if err := contract.ValidateUserID(userID); err != nil {
		return false, 0, fmt.Errorf("%s: %s: %w", p.name, op, err)
	}
	cfg := p.base.cfg.Load()
	now := ""
	if p.base.clock != nil {
		now = strconv.FormatInt(p.base.clock.Now().UnixMilli(), 10)
	}
	args := []any{now, cfg.window, cfg.max, flag(record)}
	if p.spec.Name == model.ProfileGCRA || p.spec.Name == model.ProfileTokenBucket {
		args = []any{now, cfg.window, cfg.max, p.sized(int64(cfg.max)), flag(record)}
	}
	args = append(args, p.fixedArgs...)
	var res []int64
	err := p.base.bounded(ctx, func(ctx context.Context) (err error) {
		res, err = p.script.Run(ctx, p.base.client, []string{p.Key(userID)}, args...).Int64Slice()
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("%s: %s(%q): %w: %w", p.name, op, userID, contract.ErrStore, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("%s: %s(%q): %w: script answered %v", p.name, op, userID, contract.ErrStore, res)
	}
	return res[0] == 1, int(res[1]), nil
}
