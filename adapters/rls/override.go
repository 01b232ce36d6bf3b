package rls

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
)

var overrideUnits = map[time.Duration]typev3.RateLimitUnit{
	time.Second:    typev3.RateLimitUnit_SECOND,
	time.Minute:    typev3.RateLimitUnit_MINUTE,
	time.Hour:      typev3.RateLimitUnit_HOUR,
	24 * time.Hour: typev3.RateLimitUnit_DAY,
}

// Override is a descriptor's limit override of n per window w, or why it
// cannot carry them (an error wrapping [contract.ErrInvalidConfig]): w is
// one unit, SECOND, MINUTE, HOUR or DAY ([contract.UnitWindowList]).
// (rls.proto's override also has a unit_multiplier, which envoyproxy/
// ratelimit does not read: a window of 2 units would be decided as 1.
// MONTH and YEAR are beyond the units a limiter is configured in.)
func Override(n int, w time.Duration) (*commonv3.RateLimitDescriptor_RateLimitOverride, error) {
	if err := contract.ValidateConfig(n, w); err != nil {
		return nil, err
	}
	unit, ok := overrideUnits[w]
	if !ok {
		return nil, fmt.Errorf("%w: window %v: a descriptor's limit override carries one unit, a second, a minute, an hour or a day", contract.ErrInvalidConfig, w)
	}
	if n > math.MaxUint32 {
		return nil, fmt.Errorf("%w: limit %d: a descriptor's limit override carries at most %d", contract.ErrInvalidConfig, n, uint32(math.MaxUint32))
	}
	return &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: uint32(n), Unit: unit}, nil
}

// Overriding is a client whose Configure sets the limit override that
// every later request carries in its first descriptor
// (RateLimitDescriptor.limit, as an Envoy route's rate limit action sends
// one from dynamic metadata): a server that honours it (envoyproxy/
// ratelimit does, config_impl.go's GetLimit) then decides by that limit,
// so the grader can configure it. Before any Configure, requests carry
// none: the server's own rules apply. Each Overriding keeps its own
// override, so specs that share a connection configure apart.
type Overriding struct {
	*Client
	limit atomic.Pointer[commonv3.RateLimitDescriptor_RateLimitOverride]
}

// Overriding returns a client of c's connection whose Configure sets a
// limit override.
func (c *Client) Overriding() *Overriding { return &Overriding{Client: c} }

// Configure implements [contract.RateLimiterContract]: later requests
// carry a limit override of n per w. A window other than
// [contract.UnitWindowList]'s or a limit above 2^32-1 is refused with an error
// wrapping [contract.ErrInvalidConfig], and the override in force stays.
func (o *Overriding) Configure(_ context.Context, n int, w time.Duration) error {
	lim, err := Override(n, w)
	if err != nil {
		return fmt.Errorf("Configure(%d, %v): %w", n, w, err)
	}
	o.limit.Store(lim)
	return nil
}

// Do is [Client.Do] with the override in force.
func (o *Overriding) Do(ctx context.Context, user string, hits uint32) (*adapters.Response, error) {
	return o.do(ctx, user, hits, o.limit.Load())
}

// AllowRequest implements [contract.RateLimiterContract].
func (o *Overriding) AllowRequest(ctx context.Context, user string) (bool, error) {
	return o.allowN(ctx, user, 1, o.limit.Load())
}

// AllowRequestN implements [contract.CostLimiter].
func (o *Overriding) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	return o.allowN(ctx, user, n, o.limit.Load())
}

// AllowRequestSent is [Client.AllowRequestSent] with the override in force.
func (o *Overriding) AllowRequestSent(ctx context.Context, user string) (bool, time.Time, error) {
	r, err := o.do(ctx, user, 1, o.limit.Load())
	if err != nil {
		return false, time.Time{}, err
	}
	return r.Allowed, r.Sent, nil
}
