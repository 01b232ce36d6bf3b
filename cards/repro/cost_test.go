package repro

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/ulule/limiter/v3"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
	"golang.org/x/time/rate"
)

// Every library the cards give a weight takes a negative one and refunds
// quota with it: a user who spent 3 of 3 gets 2 more after a request of
// cost -2 (robust/cost-negative on redis_rate, x-time-rate,
// throttled-goredis, throttled-memstore, ulule-redis). redis_rate's script
// adds n emission intervals to the arrival time (lua.go:18, :42);
// x/time/rate subtracts n from its tokens (rate.go:353) and allows any
// n <= burst (:362); throttled adds n emission intervals (rate.go:215);
// ulule runs INCRBY n (drivers/store/redis/store.go:22).
func TestNegativeCostsRefund(t *testing.T) {
	red := startRedis(t)
	rdb, ok := red.Client.(*redis.Client)
	if !ok {
		t.Skipf("REDIS_URL names a cluster (%T)", red.Client)
	}
	ctx := context.Background()
	start := time.UnixMilli(1767225600000)
	xt := rate.NewLimiter(rate.Limit(3.0/60), 3)
	rr := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.Limit{Rate: 3, Burst: 3, Period: time.Minute}
	tst, err := goredisstore.NewCtx(rdb, "repro-neg-throttled:")
	if err != nil {
		t.Fatal(err)
	}
	th, err := throttled.NewGCRARateLimiterCtx(tst, throttled.RateQuota{MaxRate: throttled.PerMin(3), MaxBurst: 2})
	if err != nil {
		t.Fatal(err)
	}
	ust, err := redisstore.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "repro-neg-ulule"})
	if err != nil {
		t.Fatal(err)
	}
	ul := limiter.New(ust, limiter.Rate{Period: time.Minute, Limit: 3})
	for _, lib := range []struct {
		name  string
		allow func(n int) (bool, error)
	}{
		{"x/time/rate AllowN", func(n int) (bool, error) { return xt.AllowN(start, n), nil }},
		{"redis_rate AllowN", func(n int) (bool, error) {
			res, err := rr.AllowN(ctx, "u", rrLimit, n)
			return err == nil && res.RetryAfter == -1, err
		}},
		{"throttled RateLimitCtx", func(n int) (bool, error) {
			limited, _, err := th.RateLimitCtx(ctx, "u", n)
			return !limited, err
		}},
		{"ulule Increment", func(n int) (bool, error) {
			c, err := ul.Increment(ctx, "u", int64(n))
			return !c.Reached, err
		}},
	} {
		t.Run(lib.name, func(t *testing.T) {
			var got []bool
			for _, n := range []int{1, 1, 1, -2, 1, 1, 1} {
				ok, err := lib.allow(n)
				if err != nil {
					t.Fatalf("cost %d: %v", n, err)
				}
				got = append(got, ok)
			}
			t.Logf("costs 1 1 1 -2 1 1 1: %v", got)
			want := []bool{true, true, true, true, true, true, false}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("answers %v, want %v: the cost -2 no longer refunds two requests", got, want)
				}
			}
		})
	}
}

// racingStore is throttled's go-redis store with one concurrent request
// landing between the first read and the first compare-and-swap: the
// swap then fails, as a lost race does, and RateLimitCtx tries again.
type racingStore struct {
	*goredisstore.GoRedisStore
	other *throttled.GCRARateLimiterCtx
	raced bool
}

func (s *racingStore) CompareAndSwapWithTTL(ctx context.Context, key string, old, new int64, ttl time.Duration) (bool, error) {
	if !s.raced {
		s.raced = true
		if _, _, err := s.other.RateLimitCtx(ctx, key, 1); err != nil {
			return false, err
		}
	}
	return s.GoRedisStore.CompareAndSwapWithTTL(ctx, key, old, new, ttl)
}

// throttled's peek (quantity 0) sets its quantity to 1 to compute
// RetryAfter, in the variable the retry loop reads again
// (rate.go:208-213): after a lost compare-and-swap, the second attempt
// reads quantity 1, no longer a peek, and consumes a request. The card's
// GetRemainingRequests is that peek: under concurrency, a query spends
// quota (throttled-goredis: strict/linearizable, strict/cost-concurrent,
// which pass when the card declares no remaining).
func TestThrottledPeekConsumesAfterALostSwap(t *testing.T) {
	red := startRedis(t)
	rdb, ok := red.Client.(*redis.Client)
	if !ok {
		t.Skipf("REDIS_URL names a cluster (%T)", red.Client)
	}
	ctx := context.Background()
	st, err := goredisstore.NewCtx(rdb, "repro-peek:")
	if err != nil {
		t.Fatal(err)
	}
	quota := throttled.RateQuota{MaxRate: throttled.PerMin(5), MaxBurst: 4}
	lim, err := throttled.NewGCRARateLimiterCtx(st, quota)
	if err != nil {
		t.Fatal(err)
	}
	racing, err := throttled.NewGCRARateLimiterCtx(&racingStore{GoRedisStore: st, other: lim}, quota)
	if err != nil {
		t.Fatal(err)
	}
	if limited, _, err := lim.RateLimitCtx(ctx, "u", 1); err != nil || limited {
		t.Fatalf("first request: limited %v, %v", limited, err)
	}
	// A peek, with one other request racing it: two requests in all.
	if _, _, err := racing.RateLimitCtx(ctx, "u", 0); err != nil {
		t.Fatal(err)
	}
	_, res, err := lim.RateLimitCtx(ctx, "u", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after 2 requests and a peek that lost one swap: %d remaining of 5", res.Remaining)
	if res.Remaining != 2 {
		t.Errorf("remaining %d, want 2 (the peek consumed one; 3 means it no longer does)", res.Remaining)
	}
}

// The float drift of TestXTimeRateFloatTokens on weighted requests (the
// schedule x-time-rate's strict/cost-differential once shrank to): 5 per
// minute, 5 taken at 0 and 2 at 35999 ms leave exactly
// 5 - 7 + 84000/12000 = 5 tokens at 84000 ms, but the doubles add up to
// less; AllowN admits 5 all the same (rate.go:357-362, :417).
func TestXTimeRateFloatTokensWeighted(t *testing.T) {
	start := time.UnixMilli(1767225600000)
	lim := rate.NewLimiter(rate.Limit(5.0/60), 5)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, step := range []struct{ ms, n int }{{0, 5}, {35999, 2}} {
		if !lim.AllowN(at(step.ms), step.n) {
			t.Fatalf("AllowN(+%dms, %d) refused", step.ms, step.n)
		}
	}
	got := lim.TokensAt(at(84000))
	t.Logf("TokensAt(+84000ms) = %.17g, exactly 5", got)
	if math.Floor(got) == 5 {
		t.Errorf("TokensAt(+84000ms) = %v: whole again, the float drift is gone", got)
	}
	if !lim.AllowN(at(84000), 5) {
		t.Errorf("AllowN(+84000ms, 5) refused at %.17g tokens: the library no longer admits what it drifted from", got)
	}
}
