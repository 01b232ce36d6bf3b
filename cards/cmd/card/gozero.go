package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/limit"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/rlconform/rlconform/contract"
)

// goZeroPeriod is go-zero's core/limit PeriodLimit on its own Redis client
// (core/stores/redis): one Lua script per request, INCRBY then EXPIRE on
// the first (periodscript.lua), a quota per period of whole seconds.
type goZeroPeriod struct {
	store  *zredis.Redis
	prefix string
	mu     sync.Mutex
	lim    *limit.PeriodLimit
}

// errGoZero is the answer to what PeriodLimit has no call for.
var errGoZero = errors.New("go-zero's PeriodLimit has no such call")

func newGoZeroPeriod(e *env) (contractLimiter, error) {
	store, err := goZeroStore(e)
	if err != nil {
		return nil, err
	}
	g := &goZeroPeriod{store: store, prefix: e.prefix}
	return g, g.Configure(context.Background(), e.limit, e.window)
}

// AllowRequest is TakeCtx: Allowed and HitQuota (the quota's last) are
// allowed, OverQuota denied.
func (g *goZeroPeriod) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	g.mu.Lock()
	lim := g.lim
	g.mu.Unlock()
	code, err := lim.TakeCtx(ctx, u)
	if err != nil {
		return false, storeErr("go-zero PeriodLimit TakeCtx", err)
	}
	return code == limit.Allowed || code == limit.HitQuota, nil
}

// Configure makes a PeriodLimit of the new quota and period on the same
// store and key prefix: PeriodLimit has no call that changes them (a
// stored count keeps its TTL and is compared with the new quota). Its
// period is whole seconds (an int): another window is refused.
func (g *goZeroPeriod) Configure(_ context.Context, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	if w%time.Second != 0 {
		return fmt.Errorf("%w: go-zero's PeriodLimit takes a period of whole seconds, not %v", contract.ErrInvalidConfig, w)
	}
	lim := limit.NewPeriodLimit(int(w/time.Second), n, g.store, g.prefix)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lim = lim
	return nil
}

func (g *goZeroPeriod) GetRemainingRequests(context.Context, string) (int, error) {
	return 0, fmt.Errorf("GetRemainingRequests: %w", errGoZero)
}

func (g *goZeroPeriod) Reset(context.Context, string) error {
	return fmt.Errorf("Reset: %w", errGoZero)
}

// goZeroToken is go-zero's core/limit TokenLimiter on its own Redis
// client: a token bucket of rate tokens a second and burst capacity, one
// limiter per key (tokenscript.lua: refilled by whole seconds of
// now.Unix()). The shim keeps one TokenLimiter per user, keyed by the
// prefix and the user; the library names its keys "{key}.tokens" and
// "{key}.ts", so they hold the prefix inside braces, not at their start.
type goZeroToken struct {
	store       *zredis.Redis
	prefix      string
	mu          sync.Mutex
	rate, burst int
	users       map[string]*limit.TokenLimiter
}

func newGoZeroToken(e *env) (contractLimiter, error) {
	store, err := goZeroStore(e)
	if err != nil {
		return nil, err
	}
	g := &goZeroToken{store: store, prefix: e.prefix}
	return g, g.Configure(context.Background(), e.limit, e.window)
}

// AllowRequest is AllowCtx of the user's TokenLimiter. The library
// answers a bool only: a Redis error sends it to its in-process rescue
// limiter, a deadline to a refusal, and neither reaches the shim.
func (g *goZeroToken) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	return g.limiter(u).AllowCtx(ctx), nil
}

// limiter is u's TokenLimiter at the current rate and burst, made on
// first use.
func (g *goZeroToken) limiter(u string) *limit.TokenLimiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	lim, ok := g.users[u]
	if !ok {
		lim = limit.NewTokenLimiter(g.rate, g.burst, g.store, g.prefix+u)
		g.users[u] = lim
	}
	return lim
}

// Configure sets burst N and rate N/W tokens a second for every user's
// limiter from now on: the library has no call that changes them, so each
// user's next request makes a new TokenLimiter on the same keys (what is
// stored there is kept, and read with the new rate and burst). Its rate
// is an int of tokens a second: a window that does not make one is
// refused.
func (g *goZeroToken) Configure(_ context.Context, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	if w%time.Second != 0 || n%int(w/time.Second) != 0 {
		return fmt.Errorf("%w: go-zero's TokenLimiter takes a rate of whole tokens a second, and %d per %v is not one", contract.ErrInvalidConfig, n, w)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rate, g.burst = n/int(w/time.Second), n
	g.users = map[string]*limit.TokenLimiter{}
	return nil
}

func (g *goZeroToken) GetRemainingRequests(context.Context, string) (int, error) {
	return 0, fmt.Errorf("GetRemainingRequests: %w", errGoZeroToken)
}

func (g *goZeroToken) Reset(context.Context, string) error {
	return fmt.Errorf("Reset: %w", errGoZeroToken)
}

// errGoZeroToken is the answer to what TokenLimiter has no call for.
var errGoZeroToken = errors.New("go-zero's TokenLimiter has no such call")

// goZeroStore is go-zero's own Redis client on the run's Redis.
func goZeroStore(e *env) (*zredis.Redis, error) {
	opt := e.rdb.Options()
	if opt.DB != 0 {
		return nil, fmt.Errorf("go-zero's Redis client has no database but 0, and RLCONFORM_REDIS_URL names %d", opt.DB)
	}
	conf := zredis.RedisConf{Host: opt.Addr, Type: zredis.NodeType, User: opt.Username, Pass: opt.Password, NonBlock: true}
	return zredis.NewRedis(conf)
}
