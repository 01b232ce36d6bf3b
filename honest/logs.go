package honest

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
)

//go:embed zcard.lua
var zcardSource string

var zcardScript = redis.NewScript(zcardSource)

//go:embed log.lua
var logSource string

var logScript = redis.NewScript(logSource)

//go:embed costlog.lua
var costLogSource string

var costLogScript = redis.NewScript(costLogSource)

// Log is a sliding-window log in one Redis script per decision, keyed by
// the prefix and the id, with a TTL of W refreshed on every write.
type Log struct {
	store  Store
	script *redis.Script
	key    func(prefix, userID string) string
	*settings
}

// NewZCardLog is the canonical ZREMRANGEBYSCORE + ZCARD + ZADD script:
// after a clock that stepped back it counts the entries later than now
// (the conservative reading). It once failed strict/clock-step-back.
func NewZCardLog(s Store) (*Log, error) { return newLog(s, zcardScript, plainKey) }

// NewExactLog is an exact log (ZCOUNT up to now) whose Configure takes any
// limit from 1 and any window from 1ms, as Go libraries do: 2^53 and 200
// years too. It once failed robust/invalid-config.
func NewExactLog(s Store) (*Log, error) { return newLog(s, logScript, plainKey) }

func newLog(s Store, script *redis.Script, key func(prefix, userID string) string) (*Log, error) {
	st, err := newSettings(s)
	if err != nil {
		return nil, err
	}
	return &Log{store: s, script: script, key: key, settings: st}, nil
}

// run runs the script for op: a request of cost entries (1 for
// AllowRequest), or with cost 0 a count only.
func (l *Log) run(ctx context.Context, op, user string, cost int) (bool, int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, 0, fmt.Errorf("%s: %w", op, err)
	}
	m, err := member()
	if err != nil {
		return false, 0, err
	}
	cfg := l.cfg.Load()
	if int64(cost) > cfg.n {
		// Only CostLog sends a cost above 1: one that can never fit is
		// invalid input, refused before the store is touched.
		return false, 0, fmt.Errorf("%s: %w: cost %d is above the limit %d: it can never fit", op, contract.ErrInvalidCost, cost, cfg.n)
	}
	res, err := l.script.Run(ctx, l.store.Redis, []string{l.key(l.store.Prefix, user)},
		nowArg(l.store.Clock), cfg.w, cfg.n, m, strconv.Itoa(cost)).Int64Slice()
	if err != nil {
		return false, 0, storeErr(ctx, op, err)
	}
	return res[0] == 1, int(res[1]), nil
}

// AllowRequest implements [contract.RateLimiterContract].
func (l *Log) AllowRequest(ctx context.Context, user string) (bool, error) {
	ok, _, err := l.run(ctx, "AllowRequest", user, 1)
	return ok, err
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (l *Log) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	_, n, err := l.run(ctx, "GetRemainingRequests", user, 0)
	return n, err
}

// Reset implements [contract.RateLimiterContract].
func (l *Log) Reset(ctx context.Context, user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if err := l.store.Redis.Del(ctx, l.key(l.store.Prefix, user)).Err(); err != nil {
		return storeErr(ctx, "Reset", err)
	}
	return nil
}

// Configure implements [contract.RateLimiterContract]: a limit from 1 and
// a window from 1ms, with no upper bound.
func (l *Log) Configure(ctx context.Context, n int, w time.Duration) error {
	return l.configure(ctx, n, w)
}

// CostLog is the exact log of [NewExactLog] taking weighted requests
// ([contract.CostLimiter]), all or nothing, as libraries with a
// tryConsume(n) do.
type CostLog struct {
	*Log
	positive bool // a cost of 0 is invalid input too
}

var _ contract.CostLimiter = (*CostLog)(nil)

// NewCostLog is an exact log taking weighted requests that answers a cost
// it can never take, above the limit in force, as invalid input: an error
// wrapping [contract.ErrInvalidCost], as Symfony's limiters throw "cannot
// reserve more tokens than the size of the rate limiter". The contract
// takes that answer as it takes a denial. strict/cost-differential once
// failed it: after Configure(3, 15s) had lowered the limit,
// AllowRequestN(u2, 5) answered ErrInvalidCost where the model said
// denied. A cost of 0 answers whether one more would fit.
func NewCostLog(s Store) (*CostLog, error) { return newCostLog(s, false) }

// NewPositiveCostLog is [NewCostLog] that takes only a positive cost: a
// cost of 0 is invalid input too, as Guava's tryAcquire(0) and Bucket4j's
// tryConsume(0) throw. strict/cost-differential once failed it on its
// first request of cost 0.
func NewPositiveCostLog(s Store) (*CostLog, error) { return newCostLog(s, true) }

func newCostLog(s Store, positive bool) (*CostLog, error) {
	l, err := newLog(s, costLogScript, plainKey)
	if err != nil {
		return nil, err
	}
	return &CostLog{l, positive}, nil
}

// AllowRequestN implements [contract.CostLimiter]: a request of cost n is
// allowed when n more entries fit, and then logs n; refused, nothing. A
// negative cost, one above the limit, and for [NewPositiveCostLog] a cost
// of 0, is an error wrapping [contract.ErrInvalidCost], and changes
// nothing.
func (l *CostLog) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, fmt.Errorf("AllowRequestN: %w", err)
	}
	if err := contract.ValidateCost(n); err != nil {
		return false, fmt.Errorf("AllowRequestN: %w", err)
	}
	if n == 0 && l.positive {
		return false, fmt.Errorf("AllowRequestN: %w: cost 0, want 1 or more", contract.ErrInvalidCost)
	}
	ok, remaining, err := l.run(ctx, "AllowRequestN", user, n)
	if n == 0 {
		return remaining > 0, err // whether one more would fit
	}
	return ok, err
}
