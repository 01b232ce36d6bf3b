package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/throttled/throttled/v2/store/memstore"
)

// throttledGCRA is github.com/throttled/throttled/v2's GCRARateLimiterCtx
// (what its HTTPRateLimiterCtx calls) on a store: a burst of N (MaxBurst
// N-1) at N per W. throttled has no call that forgets a key: no Reset.
type throttledGCRA struct {
	store throttled.GCRAStoreCtx
	mu    sync.Mutex
	lim   *throttled.GCRARateLimiterCtx
}

func newThrottled(st throttled.GCRAStoreCtx, n int, w time.Duration) (*throttledGCRA, error) {
	t := &throttledGCRA{store: st}
	if err := t.Configure(context.Background(), n, w); err != nil {
		return nil, err
	}
	return t, nil
}

func newThrottledRedis(e *env) (contractLimiter, error) {
	st, err := goredisstore.NewCtx(e.rdb, e.prefix+"throttled:")
	if err != nil {
		return nil, err
	}
	return newThrottled(st, e.limit, e.window)
}

// newThrottledMem is the memory store, on the clock the store lets a
// caller set (SetTimeNow, "for unit tests that use a simulated
// wallclock").
func newThrottledMem(e *env) (contractLimiter, error) {
	st, err := memstore.New(0)
	if err != nil {
		return nil, err
	}
	st.SetTimeNow(e.now)
	return newThrottled(throttled.WrapStoreWithContext(st), e.limit, e.window)
}

func (t *throttledGCRA) limiter() *throttled.GCRARateLimiterCtx {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lim
}

func (t *throttledGCRA) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	limited, _, err := t.limiter().RateLimitCtx(ctx, u, 1)
	if err != nil {
		return false, storeErr("throttled RateLimitCtx", err)
	}
	return !limited, nil
}

// AllowRequestN is RateLimitCtx(ctx, key, n), the library's weighted call
// ("a greater quantity could rate limit based on the size of a file
// upload", rate.go:177-182): n emission intervals, limited when they do not
// fit the tolerance (rate.go:215-232), n above the burst included;
// quantity 0 peeks (rate.go:210-241); a negative n is not limited and
// moves the arrival time back (a refund the library takes).
func (t *throttledGCRA) AllowRequestN(ctx context.Context, u string, n int) (bool, error) {
	if err := checkUser(u); err != nil {
		return false, err
	}
	limited, _, err := t.limiter().RateLimitCtx(ctx, u, n)
	if err != nil {
		return false, storeErr("throttled RateLimitCtx(n)", err)
	}
	return !limited, nil
}

// GetRemainingRequests asks with quantity 0, the library's "peek".
func (t *throttledGCRA) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if err := checkUser(u); err != nil {
		return 0, err
	}
	_, res, err := t.limiter().RateLimitCtx(ctx, u, 0)
	if err != nil {
		return 0, storeErr("throttled RateLimitCtx(0)", err)
	}
	return res.Remaining, nil
}

func (t *throttledGCRA) Reset(context.Context, string) error {
	return errNoReset
}

// Configure makes a limiter with the new quota on the same store (the
// stored arrival times are read with it).
func (t *throttledGCRA) Configure(_ context.Context, n int, w time.Duration) error {
	lim, err := throttled.NewGCRARateLimiterCtx(t.store, throttled.RateQuota{MaxRate: throttled.PerDuration(n, w), MaxBurst: n - 1})
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lim = lim
	return nil
}

// throttledHTTP is the library's HTTPRateLimiterCtx on its go-redis v9
// store, varying by the X-User header, in front of a handler that
// answers 200.
func throttledHTTP(e *env) (http.Handler, error) {
	st, err := goredisstore.NewCtx(e.rdb, e.prefix+"throttled:")
	if err != nil {
		return nil, err
	}
	lim, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerDuration(e.limit, e.window), MaxBurst: e.limit - 1})
	if err != nil {
		return nil, err
	}
	h := throttled.HTTPRateLimiterCtx{RateLimiter: lim, VaryBy: &throttled.VaryBy{Headers: []string{"X-User"}}}
	return h.RateLimit(ok), nil
}
