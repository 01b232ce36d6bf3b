package main

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisRate is github.com/go-redis/redis_rate/v10: GCRA in one Lua script
// on Redis TIME, burst = rate = N per W.
type redisRate struct {
	lim   *redis_rate.Limiter
	mu    sync.Mutex
	limit redis_rate.Limit
}

func newRedisRate(e *env) (contractLimiter, error) {
	return &redisRate{
		lim:   redis_rate.NewLimiter(prefixed{e.rdb, e.prefix}),
		limit: redis_rate.Limit{Rate: e.limit, Burst: e.limit, Period: e.window},
	}, nil
}

func (r *redisRate) current() redis_rate.Limit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limit
}

func (r *redisRate) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	res, err := r.lim.Allow(ctx, u, r.current())
	if err != nil {
		return false, storeErr("redis_rate Allow", err)
	}
	return res.Allowed > 0, nil
}

// AllowRequestN is redis_rate's AllowN(ctx, key, limit, n), as given: the
// script adds n emission intervals and refuses when they do not fit the
// burst (lua.go:42-57), n > burst included; a negative n passes its check
// and moves the arrival time back (a refund the library takes). Allowed is
// the script's branch: RetryAfter is -1 when it allows, whatever n
// (lua.go:63-64; rate.go:191-193), where Allowed is n (0 for n = 0).
func (r *redisRate) AllowRequestN(ctx context.Context, u string, n int) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	res, err := r.lim.AllowN(ctx, u, r.current(), n)
	if err != nil {
		return false, storeErr("redis_rate AllowN", err)
	}
	return res.RetryAfter == -1, nil
}

// GetRemainingRequests asks AllowN with n = 0, which changes nothing and
// answers the library's Remaining.
func (r *redisRate) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if err := checkUser(u); err != nil {
		return 0, err
	}
	res, err := r.lim.AllowN(ctx, u, r.current(), 0)
	if err != nil {
		return 0, storeErr("redis_rate AllowN(0)", err)
	}
	return res.Remaining, nil
}

func (r *redisRate) Reset(ctx context.Context, u string) error {
	if err := checkUser(u); err != nil {
		return err
	}
	if err := r.lim.Reset(ctx, u); err != nil {
		return storeErr("redis_rate Reset", err)
	}
	return nil
}

// Configure sets the Limit passed with every later call (redis_rate takes
// it per call: the stored arrival time is read with the new one).
func (r *redisRate) Configure(_ context.Context, n int, w time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limit = redis_rate.Limit{Rate: n, Burst: n, Period: w}
	return nil
}

// prefixed is the client redis_rate is given: it puts the library's keys
// (always "rate:" + key) under the run's prefix, so that rlconform can
// inspect them; the script and its arguments pass unchanged.
type prefixed struct {
	c      *redis.Client
	prefix string
}

func (p prefixed) keys(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = p.prefix + k
	}
	return out
}

func (p prefixed) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.c.Eval(ctx, script, p.keys(keys), args...)
}
func (p prefixed) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.c.EvalSha(ctx, sha1, p.keys(keys), args...)
}
func (p prefixed) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return p.c.EvalRO(ctx, script, p.keys(keys), args...)
}
func (p prefixed) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return p.c.EvalShaRO(ctx, sha1, p.keys(keys), args...)
}
func (p prefixed) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return p.c.ScriptExists(ctx, hashes...)
}
func (p prefixed) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return p.c.ScriptLoad(ctx, script)
}
func (p prefixed) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return p.c.Del(ctx, p.keys(keys)...)
}
