package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
)

// ulule is github.com/ulule/limiter/v3 on its Redis store: a count per
// key, INCRBY then PEXPIRE on the first hit, in one Lua script.
type ulule struct {
	store limiter.Store
	mu    sync.Mutex
	rate  limiter.Rate
}

func newUluleStore(e *env) (limiter.Store, error) {
	return redisstore.NewStoreWithOptions(e.rdb, limiter.StoreOptions{Prefix: e.prefix + "ulule", MaxRetry: limiter.DefaultMaxRetry})
}

func newUlule(e *env) (contractLimiter, error) {
	st, err := newUluleStore(e)
	if err != nil {
		return nil, err
	}
	return &ulule{store: st, rate: limiter.Rate{Period: e.window, Limit: int64(e.limit)}}, nil
}

// limiter is the library's Limiter with the rate in force.
func (l *ulule) limiter() *limiter.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return limiter.New(l.store, l.rate)
}

func (l *ulule) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	c, err := l.limiter().Get(ctx, u)
	if err != nil {
		return false, storeErr("ulule Get", err)
	}
	return !c.Reached, nil
}

// AllowRequestN is Increment(ctx, key, n), the library's weighted call
// (limiter.go:62-65): INCRBY n in the script Get runs with 1
// (drivers/store/redis/store.go:18-31, :99-102), reached when the count
// exceeds the limit (drivers/store/common/context.go:15-18), n above the
// limit included; counted even when reached. A negative n is INCRBY with
// it: a refund the library takes.
func (l *ulule) AllowRequestN(ctx context.Context, u string, n int) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	c, err := l.limiter().Increment(ctx, u, int64(n))
	if err != nil {
		return false, storeErr("ulule Increment", err)
	}
	return !c.Reached, nil
}

func (l *ulule) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if err := checkUser(u); err != nil {
		return 0, err
	}
	c, err := l.limiter().Peek(ctx, u)
	if err != nil {
		return 0, storeErr("ulule Peek", err)
	}
	return int(c.Remaining), nil
}

func (l *ulule) Reset(ctx context.Context, u string) error {
	if err := checkUser(u); err != nil {
		return err
	}
	if _, err := l.limiter().Reset(ctx, u); err != nil {
		return storeErr("ulule Reset", err)
	}
	return nil
}

// Configure sets the Rate of every later call (the library reads it per
// call: a stored count is compared with the new limit, and its TTL kept).
func (l *ulule) Configure(_ context.Context, n int, w time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate = limiter.Rate{Period: w, Limit: int64(n)}
	return nil
}

// ululeStdlib is the library's stdlib middleware on its Redis store, in
// front of a handler that answers 200: the key is the X-User header (the
// default is the client's IP, the same for every user of the grader).
func ululeStdlib(e *env) (http.Handler, error) {
	st, err := newUluleStore(e)
	if err != nil {
		return nil, err
	}
	lim := limiter.New(st, limiter.Rate{Period: e.window, Limit: int64(e.limit)})
	mw := stdlib.NewMiddleware(lim,
		stdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get("X-User") }),
		stdlib.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}))
	return mw.Handler(ok), nil
}

// ok is the service behind the middlewares.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Write([]byte("ok\n"))
})
