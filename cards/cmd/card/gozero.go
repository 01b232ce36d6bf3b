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
	opt := e.rdb.Options()
	if opt.DB != 0 {
		return nil, fmt.Errorf("go-zero's Redis client has no database but 0, and RLCONFORM_REDIS_URL names %d", opt.DB)
	}
	conf := zredis.RedisConf{Host: opt.Addr, Type: zredis.NodeType, User: opt.Username, Pass: opt.Password, NonBlock: true}
	store, err := zredis.NewRedis(conf)
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
