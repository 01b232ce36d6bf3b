package honest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
)

//go:embed ttlwindow.lua
var ttlWindowSource string

var ttlWindowScript = redis.NewScript(ttlWindowSource)

// TTLWindowProfile is the profile [TTLWindow] implements.
const TTLWindowProfile = "fixed-window:align=first-hit,count-denied=true,query=read"

// TTLWindow is a fixed window opened by a user's first request and kept
// as one Redis key whose TTL is the window, as rate-limiter-flexible's
// RateLimiterRedis writes it: SET NX with the TTL, then INCRBY the cost;
// a request is allowed while the count is at most the limit. Its time is
// Redis's expiry, so it is graded without clock control only. A request
// of cost 0 opens a window as any request does: strict/cost-differential
// once failed it for that in real time (the model took a cost of 0 for
// nothing at all), where the window it opens harms no one.
type TTLWindow struct {
	store Store
	*settings
}

// NewTTLWindow returns a TTL window on s (its Clock is not read).
func NewTTLWindow(s Store) (*TTLWindow, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &TTLWindow{store: s, settings: st}, nil
}

// AllowRequest implements [contract.RateLimiterContract].
func (l *TTLWindow) AllowRequest(ctx context.Context, user string) (bool, error) {
	return l.consume(ctx, "AllowRequest", user, 1)
}

// AllowRequestN implements [contract.CostLimiter].
func (l *TTLWindow) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	if err := contract.ValidateCost(n); err != nil {
		return false, fmt.Errorf("AllowRequestN: %w", err)
	}
	return l.consume(ctx, "AllowRequestN", user, n)
}

func (l *TTLWindow) consume(ctx context.Context, op, user string, n int) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	cfg := l.cfg.Load()
	count, err := ttlWindowScript.Run(ctx, l.store.Redis, []string{l.store.Prefix + user}, n, cfg.w).Int64()
	if err != nil {
		return false, storeErr(ctx, op, err)
	}
	return count <= cfg.n, nil
}

// GetRemainingRequests implements [contract.RateLimiterContract]: the
// limit less the count, or the limit when no window is open.
func (l *TTLWindow) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, fmt.Errorf("GetRemainingRequests: %w", err)
	}
	cfg := l.cfg.Load()
	count, err := l.store.Redis.Get(ctx, l.store.Prefix+user).Int64()
	if errors.Is(err, redis.Nil) {
		return int(cfg.n), nil
	}
	if err != nil {
		return 0, storeErr(ctx, "GetRemainingRequests", err)
	}
	return int(max(0, cfg.n-count)), nil
}

// Reset implements [contract.RateLimiterContract].
func (l *TTLWindow) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if err := l.store.Redis.Del(ctx, l.store.Prefix+user).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract]: later windows have
// the new length; an open one keeps its TTL.
func (l *TTLWindow) Configure(ctx context.Context, n int, w time.Duration) error {
	return l.configure(ctx, n, w)
}
