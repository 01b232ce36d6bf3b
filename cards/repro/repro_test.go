package repro

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/common"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
	"golang.org/x/time/rate"

	"github.com/rlconform/rlconform/redisenv"
)

func startRedis(t *testing.T) *redisenv.Redis {
	t.Helper()
	red, err := redisenv.Start(context.Background())
	if err != nil {
		t.Fatalf("a Redis: %v", err)
	}
	t.Cleanup(func() { red.Close() })
	return red
}

// throttled's go-redis store sets a key's TTL to the arrival time's
// remaining life rounded down to whole seconds (goredisstore.go:103-113;
// a new key: SETNX, then EXPIRE, which go-redis sends in whole seconds,
// goredisstore.go:79-92). With 1 per 1.5s, the first request leaves an
// arrival time 1.5s ahead in a key that dies after 1s: from then on a
// request finds no key and is allowed, 0.5s before GCRA allows it
// (throttled-goredis: strict/config-range, robust/key-hygiene,
// strict/linearizable).
func TestThrottledGoRedisTTLRoundedDown(t *testing.T) {
	red := startRedis(t)
	ctx := context.Background()
	st, err := goredisstore.NewCtx(red.Client, "repro:")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerDuration(1, 1500*time.Millisecond), MaxBurst: 0})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} { // limited?
		limited, res, err := lim.RateLimitCtx(ctx, "u", 1)
		if err != nil {
			t.Fatal(err)
		}
		if limited != want {
			t.Fatalf("request %d: limited = %v, want %v", i+1, limited, want)
		}
		pttl, err := red.Client.PTTL(ctx, "repro:u").Result()
		if err != nil {
			t.Fatal(err)
		}
		// The arrival time is ResetAfter ahead when the request is allowed,
		// and TAT − now ahead (RetryAfter + T − DVT = RetryAfter) when denied.
		life := res.ResetAfter
		if limited {
			life = res.RetryAfter
		}
		t.Logf("request %d: limited %v, the arrival time is %v ahead, the key's TTL is %v", i+1, limited, life, pttl)
		if i == 0 && !(pttl <= time.Second && life > 1400*time.Millisecond) {
			t.Errorf("the key's TTL %v covers the arrival time %v ahead: the TTL is no longer rounded down", pttl, life)
		}
	}
}

// The TTL is exact when the arrival time's life is a whole number of
// seconds or less than one (a burst of N within W = 1s): why a real-time
// run on the default 1s window cannot see the rounding, and the card
// grades throttled with a window of 1.5s.
func TestThrottledGoRedisTTLWholeSecond(t *testing.T) {
	red := startRedis(t)
	ctx := context.Background()
	st, _ := goredisstore.NewCtx(red.Client, "repro:")
	lim, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerDuration(5, time.Second), MaxBurst: 4})
	if err != nil {
		t.Fatal(err)
	}
	var res throttled.RateLimitResult
	for range 5 {
		if _, res, err = lim.RateLimitCtx(ctx, "u", 1); err != nil {
			t.Fatal(err)
		}
	}
	pttl, _ := red.Client.PTTL(ctx, "repro:u").Result()
	if pttl < res.ResetAfter-50*time.Millisecond {
		t.Errorf("after a burst of 5 in 1s: TTL %v, the arrival time %v ahead", pttl, res.ResetAfter)
	}
}

// ulule/limiter's X-RateLimit-Reset is the window's end as an epoch
// second rounded down (common/context.go:20: expiration.Unix()): before
// the window ends, so a client that waits for it is refused
// (ulule-stdlib: http/ratelimit-fields). A replay of the library's own
// function, and the header of its middleware on its Redis store.
func TestUluleResetRoundedDown(t *testing.T) {
	now := time.UnixMilli(1767225600400) // x.400 s
	end := now.Add(1500 * time.Millisecond)
	c := common.GetContextFromState(now, limiter.Rate{Period: 1500 * time.Millisecond, Limit: 5}, end, 5)
	if c.Reset != end.Unix() || c.Reset*1000 >= end.UnixMilli() {
		t.Errorf("Reset = %d for a window ending at %d ms: no longer rounded down", c.Reset, end.UnixMilli())
	}

	red := startRedis(t)
	st, err := redisstore.NewStoreWithOptions(red.Client, limiter.StoreOptions{Prefix: "repro"})
	if err != nil {
		t.Fatal(err)
	}
	mw := stdlib.NewMiddleware(limiter.New(st, limiter.Rate{Period: 10 * time.Second, Limit: 5}),
		stdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get("X-User") }))
	srv := httptest.NewServer(mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	before := 0
	for i := range 20 { // a window of 10s opened at a random millisecond ends on a whole second 1 time in 1000
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-User", fmt.Sprint("u", i))
		sent := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		pttl, _ := red.Client.PTTL(context.Background(), fmt.Sprint("repro:u", i)).Result()
		// The window ends at least sent + PTTL.
		if reset*1000 < sent.Add(pttl).UnixMilli() {
			before++
		}
	}
	if before == 0 {
		t.Error("X-RateLimit-Reset never named a second before the window's end")
	}
}

// golang.org/x/time/rate keeps tokens as float64 and converts time to
// tokens by elapsed.Seconds() × limit (rate.go:422-427). 5 per minute:
// one allowed at 0, four at 5351ms, one at 22400ms, and at 72000ms the
// bucket is exactly full (5), but the doubles add up to 4.999…; AllowN
// admits 5 all the same, its wait for the missing 1e-15 token truncated
// to 0 ns (rate.go:357-362, :417). So ⌊TokensAt⌋ (4) is not what the
// library grants: x-time-rate's remaining is the count AllowN admits
// (cards/cmd/card remainingAt), and this is the schedule its
// strict/differential once shrank to, when the card answered ⌊TokensAt⌋.
func TestXTimeRateFloatTokens(t *testing.T) {
	start := time.UnixMilli(1767225600000)
	lim := rate.NewLimiter(rate.Limit(5.0/60), 5)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, step := range []struct{ ms, n int }{{0, 1}, {5351, 4}, {22400, 1}} {
		if !lim.AllowN(at(step.ms), step.n) {
			t.Fatalf("AllowN(+%dms, %d) refused", step.ms, step.n)
		}
	}
	// Exactly: 5 - 1 + 5351/12000×... the bucket is full again at 72000ms:
	// 5 − 6 + 72000/12000 = 5.
	got := lim.TokensAt(at(72000))
	t.Logf("TokensAt(+72000ms) = %.17g, exactly 5", got)
	if math.Floor(got) == 5 {
		t.Errorf("TokensAt(+72000ms) = %v: whole again, the float drift is gone", got)
	}
	if !lim.AllowN(at(72000), 5) {
		t.Errorf("AllowN(+72000ms, 5) refused at %.17g tokens: the library no longer admits what it drifted from", got)
	}
}
