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

// luaProfile is how the reference implements one algorithm on Redis:
// its script, the arguments its parameters become, and the products of a
// configuration it computes with.
type luaProfile struct {
	source string // the script as Redis runs it: the prelude, then the file
	// sizedBy names the parameter of the burst or capacity ("limit":
	// follow N) that the script takes after N; "" for none.
	sizedBy string
	// args are the script's arguments after the common ones.
	args func(p map[string]string) []any
	// exact refuses a configuration (N, C the burst or capacity, W in ms)
	// the script could not compute exactly; nil when it has no products.
	exact func(n, c, w int64) error
	// debt says that the script takes the parameter cost=debt
	// (model.CostParam), as its argument after the fixed ones; costExact
	// refuses a cost it could not compute exactly under it (W in ms).
	debt      bool
	costExact func(cost, w int64) error
}

// luaProfileOf is the reference's implementation of the algorithm name,
// one entry per profile script: the one place this package knows them.
func luaProfileOf(name string) (luaProfile, bool) {
	switch name {
	case model.ProfileFixedWindow:
		return luaProfile{source: luaprelude.Source(fixedWindowBody), args: func(p map[string]string) []any {
			return []any{p["align"], flag(p["count-denied"] == "true"), p["query"]}
		}}, true
	case model.ProfileSlidingCounter:
		return luaProfile{source: luaprelude.Source(slidingCounterBody), args: func(p map[string]string) []any {
			return []any{flag(p["count-denied"] == "true"), p["align"], p["admit"]}
		}, exact: func(n, _, w int64) error { return overBound("N×W", n, w) }}, true
	case model.ProfileGCRA:
		return luaProfile{source: luaprelude.Source(gcraBody), sizedBy: "burst", args: func(p map[string]string) []any { return []any{p[model.CostParam]} },
			exact: func(n, c, w int64) error { return errors.Join(overBound("B×W", c, w), overBound("N", n, 1)) },
			debt:  true, costExact: func(cost, w int64) error { return costOverBound(cost, w) }}, true
	case model.ProfileTokenBucket:
		return luaProfile{source: luaprelude.Source(tokenBucketBody), sizedBy: "capacity", args: func(p map[string]string) []any {
			return []any{p["refill"], p["expire"], p["query"]}
		}, exact: func(n, c, w int64) error { return errors.Join(overBound("C×W", c, w), overBound("N", n, 1)) }}, true
	}
	return luaProfile{}, false
}

// overBound is an error when a×b is above [ExactBound].
func overBound(what string, a, b int64) error {
	if a > ExactBound/b {
		return fmt.Errorf("%w: %s = %d×%d is above 2^52, the largest it computes exactly", contract.ErrInvalidConfig, what, a, b)
	}
	return nil
}

// costOverBound is an error wrapping [contract.ErrInvalidCost] when a
// cost n of a profile that runs into debt (cost=debt) makes n×W above
// [ExactBound].
func costOverBound(n, w int64) error {
	if n > ExactBound/w {
		return fmt.Errorf("%w: n×W = %d×%d is above 2^52, the largest this cost=debt limiter computes exactly", contract.ErrInvalidCost, n, w)
	}
	return nil
}

// ExactBound is the largest product of a configuration the profile scripts
// compute with: 2^52. Redis runs Lua with double-precision numbers, whole
// numbers exact up to 2^53; keeping every compared quantity at most 2^52
// leaves room for one sum. NewProfile and Configure refuse, with an error
// wrapping [contract.ErrInvalidConfig], a configuration that would pass it:
//
//   - sliding-counter: N*W (W in ms);
//   - gcra: B*W, and N (B the burst, N by default); with cost=debt, n*W
//     for a request of cost n too, which AllowRequestN refuses above it
//     with an error wrapping [contract.ErrInvalidCost];
//   - token-bucket: C*W, and N (C the capacity, N by default).
//
// Fixed windows have no products. For scale: with W = 100 years N may be
// up to 1427; with W = 30 days, up to 1.7 million; with W = 1 minute, up to
// 75 billion.
const ExactBound = 1 << 52

// NewProfile returns a Redis limiter implementing the profile spec exactly
// as its model (model.Variant.New) decides, one Lua script per decision: the
// sliding log is [New]; fixed windows (align=epoch, go-zero, first-grid, first-hit,
// first-second at phase 0, elastic, elastic-allowed, count-denied, query), the two-window weighted counter (align, count-denied,
// admit), GCRA (burst, cost) and token buckets (capacity, refill, expire,
// query; cost=whole only) keep one HASH per user under
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
// opts.Clock, or the Redis server's TIME when it is nil. The limiter is a
// [contract.CostLimiter]: a request of cost n is decided as the model's
// AllowN decides it (model.Weighted).
func NewProfile(client redis.UniversalClient, spec model.Variant, opts Options) (contract.RateLimiterContract, error) {
	// rlconform's mutants plant their faults in the script this way.
	var rewrite func(string) (string, error)
	if h, ok := client.(scripthook.Client); ok {
		client, rewrite = h.UniversalClient, h.Rewrite
	}
	if spec.IsSlidingLog() {
		return New(client, opts)
	}
	if err := Implements(spec); err != nil {
		return nil, err
	}
	full, _ := spec.Complete() // Implements parsed it
	impl, _ := luaProfileOf(full.Name)
	base, err := New(client, opts)
	if err != nil {
		return nil, err
	}
	p := &profileLimiter{base: base, spec: full, impl: impl, script: redis.NewScript(impl.source), fixedArgs: impl.args(full.Params)}
	if impl.sizedBy != "" {
		p.param = paramOf(full.Params[impl.sizedBy])
	}
	if rewrite != nil {
		src, err := rewrite(impl.source)
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

// Implements reports why NewProfile has no implementation of spec, or
// nil: the profile's script reads a change of configuration as the
// model's first reading, so a variant that pins another has none.
func Implements(spec model.Variant) error {
	if spec.IsSlidingLog() {
		return nil
	}
	full, err := spec.Complete()
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if _, ok := luaProfileOf(full.Name); !ok {
		return fmt.Errorf("reference: profile %q has no Redis implementation", full.Name)
	}
	if r, first := full.Reading(), full.Algorithm().Readings; r != "" && len(first) > 0 && r != first[0].Name {
		return fmt.Errorf("reference: profile %s: the reference reads a change of configuration as %s only (reconfigure=%s, or any)", full, first[0].Name, first[0].Name)
	}
	if impl, _ := luaProfileOf(full.Name); full.Params[model.CostParam] == model.CostDebt && !impl.debt {
		return fmt.Errorf("reference: profile %s: the reference's %s decides a weighted request whole only (cost=whole); cost=debt is implemented for %s", full, full.Name, model.ProfileGCRA)
	}
	if r := full.Params[model.RenewParam]; r != "" && r != model.RenewCounted {
		return fmt.Errorf("reference: profile %s: the reference's %s keeps a first-grid user's grid by counted requests only (renew=counted)", full, full.Name)
	}
	return nil
}

// profileLimiter is the Redis implementation of a profile other than the
// sliding log. base holds the client, prefix, clock, timeout and the
// configuration in force.
type profileLimiter struct {
	base      *Limiter
	spec      model.Variant
	name      string
	impl      luaProfile
	script    *redis.Script
	param     int64 // the burst or capacity (impl.sizedBy); 0 = N
	fixedArgs []any // the script's arguments after the common ones
}

var _ contract.CostLimiter = (*profileLimiter)(nil)

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
	if p.impl.exact == nil {
		return nil
	}
	if err := p.impl.exact(int64(n), p.sized(int64(n)), w); err != nil {
		return fmt.Errorf("this %s limiter: %w", p.spec.Name, err)
	}
	return nil
}

// Key returns the Redis key that holds userID's state.
func (p *profileLimiter) Key(userID string) string { return p.base.Key(userID) }

// AllowRequest implements [contract.RateLimiterContract].
func (p *profileLimiter) AllowRequest(ctx context.Context, userID string) (bool, error) {
	ok, _, err := p.run(ctx, "AllowRequest", userID, 1, true)
	return ok, err
}

// AllowRequestN implements [contract.CostLimiter] as the profile's model
// decides a request of cost n (model.Weighted): all or nothing, n units
// of the profile's count, intervals or tokens; a profile that counts
// denied requests counts a refused one n times. A cost of 0 consumes and
// writes nothing, and is allowed (as the model answers); a cost above N
// (above the burst or capacity) is refused, but by a GCRA with cost=debt,
// which allows any cost while nothing is owed; a negative one returns
// an error wrapping [contract.ErrInvalidCost].
func (p *profileLimiter) AllowRequestN(ctx context.Context, userID string, n int) (bool, error) {
	if err := contract.ValidateCost(n); err != nil {
		return false, fmt.Errorf("%s: AllowRequestN: %w", p.name, err)
	}
	if p.impl.costExact != nil && p.spec.Params[model.CostParam] == model.CostDebt {
		if err := p.impl.costExact(int64(n), p.base.cfg.Load().window); err != nil {
			return false, fmt.Errorf("%s: AllowRequestN: %w", p.name, err)
		}
	}
	ok, _, err := p.run(ctx, "AllowRequestN", userID, n, true)
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (p *profileLimiter) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	_, n, err := p.run(ctx, "GetRemainingRequests", userID, 1, false)
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

// run runs the profile's script for one operation, a request of cost n
// (n >= 0) when record is set.
func (p *profileLimiter) run(ctx context.Context, op, userID string, n int, record bool) (bool, int, error) {
	if err := contract.ValidateUserID(userID); err != nil {
		return false, 0, fmt.Errorf("%s: %s: %w", p.name, op, err)
	}
	cfg := p.base.cfg.Load()
	now := ""
	if p.base.clock != nil {
		now = strconv.FormatInt(p.base.clock.Now().UnixMilli(), 10)
	}
	args := []any{now, cfg.window, cfg.max, flag(record)}
	if p.impl.sizedBy != "" {
		args = []any{now, cfg.window, cfg.max, p.sized(int64(cfg.max)), flag(record)}
	}
	args = append(args, p.fixedArgs...)
	if n != 1 {
		args = append(args, strconv.Itoa(n)) // the cost, after the fixed arguments; absent, a unit request
	}
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
