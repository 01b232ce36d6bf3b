package repro

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// rate-limiter-flexible's RateLimiterRedis takes its duration in seconds
// and gives Redis whole ones: secDuration = Math.floor(msDuration / 1000)
// (lib/RateLimiterRedis.js:117). Under a second that is 0, and the count
// is then INCRBY with no expiry at all (:164-171): the window never ends
// and the key is never forgotten (rate-limiter-flexible: core/reconfigure,
// whose shorter window is under a second in real time). Over a second
// the fraction is dropped: a window of 1.5 s lives 1 s.
func TestFlexibleWindowInWholeSeconds(t *testing.T) {
	red := startRedis(t)
	base := serveNode(t, "flexible.js", red.URL, "/rlc/v1/capabilities")
	ctx := context.Background()
	for _, tc := range []struct {
		windowMs int
		user     string
		least    time.Duration // the TTL a window of windowMs needs
	}{{431, "sub-second", 431 * time.Millisecond}, {1500, "one-and-a-half", 1500 * time.Millisecond}} {
		post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 4, "window_ms": tc.windowMs})
		if out := post(t, base+"/rlc/v1/allow", map[string]any{"user_id": tc.user}); out["allowed"] != true {
			t.Fatalf("window %dms, first request: %v", tc.windowMs, out)
		}
		pttl, err := red.Client.PTTL(ctx, "repro:rlflx:"+tc.user).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("window %dms: the count's TTL is %v", tc.windowMs, pttl)
		switch {
		case tc.windowMs < 1000 && pttl != -1:
			t.Errorf("window %dms: TTL %v, want none (-1): the count expires now", tc.windowMs, pttl)
		case tc.windowMs > 1000 && (pttl < 0 || pttl > time.Second):
			t.Errorf("window %dms: TTL %v, want at most 1s (the fraction dropped): it now covers the window (%v)", tc.windowMs, pttl, tc.least)
		}
	}
}

// rate-limiter-flexible's consume(key, points) runs INCRBY points before
// it decides (lib/RateLimiterRedis.js:4-12, RateLimiterStoreAbstract.js:
// 62), so a negative cost refunds quota (rate-limiter-flexible:
// robust/cost-negative), and a refused cost is counted whole: its issue
// #286, which the card's profile (fixed-window, count-denied=true)
// describes, so that strict/cost-differential passes.
func TestFlexibleCostsCountedBeforeTheDecision(t *testing.T) {
	red := startRedis(t)
	base := serveNode(t, "flexible.js", red.URL, "/rlc/v1/capabilities")
	post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 3, "window_ms": 60000})
	allow := func(user string, cost int) bool {
		return post(t, base+"/rlc/v1/allow", map[string]any{"user_id": user, "cost": cost})["allowed"] == true
	}
	var got []bool
	for _, n := range []int{1, 1, 1, -2, 1, 1, 1} {
		got = append(got, allow("negative", n))
	}
	t.Logf("costs 1 1 1 -2 1 1 1, limit 3: %v", got)
	if want := fmt.Sprint([]bool{true, true, true, true, true, true, false}); fmt.Sprint(got) != want {
		t.Errorf("answers %v, want %v: the cost -2 no longer refunds two requests", got, want)
	}
	if allow("refused", 4) {
		t.Fatal("a cost of 4 over a limit of 3 was allowed")
	}
	rem := post(t, base+"/rlc/v1/remaining", map[string]any{"user_id": "refused"})["remaining"]
	next := allow("refused", 1)
	t.Logf("after a refused cost of 4 (limit 3): remaining %v, then a cost of 1 allowed: %v", rem, next)
	if rem != float64(0) || next {
		t.Errorf("a refused cost is no longer counted (issue #286): remaining %v, next allowed %v", rem, next)
	}
}

// @nestjs/throttler blocks a user for blockDuration from the request that
// went over the limit, and blockDuration defaults to the ttl
// (throttler.guard.js:93; throttler.service.js:132-144): with 10 per 10 s
// and a request a second, the eleventh at 9.5 s is refused until 19.5 s,
// though the first request stops counting at 10 s (its issue #2208;
// nestjs-throttler: core/sliding-expiry, strict/rolling-expiry,
// strict/boundary-burst-epoch, strict/denied-not-logged,
// strict/linearizable). With blockDuration 0 its storage is a sliding log
// (incrementWithoutBlock, throttler.service.js:94-110): allowed at 10.5 s.
// The storage itself, on a clock moved by hand (testdata/nest-block.js).
func TestNestThrottlerBlocksForTheTTL(t *testing.T) {
	out := runNode(t, "nest-block.js")
	t.Logf("instant (ms): answer, 10 per 10s:\n%s", out)
	tenAllowed := "0:allowed 1000:allowed 2000:allowed 3000:allowed 4000:allowed 5000:allowed 6000:allowed 7000:allowed 8000:allowed 9000:allowed"
	for _, want := range []string{
		"ttl " + tenAllowed + " 9500:denied 10500:denied 19400:denied 19600:allowed",
		"0 " + tenAllowed + " 9500:denied 10500:allowed 19400:allowed 19600:allowed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want the line %q", want)
		}
	}
}

// express-rate-limit's standard headers, as each draft of
// draft-ietf-httpapi-ratelimit-headers writes them (dist/index.mjs:
// 229-263): draft-6 a RateLimit-Policy "5;w=60" (the limit as the item,
// its window a parameter) and RateLimit-Limit/-Remaining/-Reset; draft-7
// the same policy and a RateLimit dictionary "limit=5, remaining=4,
// reset=60"; draft-8 the named items rlconform reads. Each counts down
// the quota left and resets in whole seconds rounded up: the
// http/ratelimit-fields and http/retry-after failures of
// express-rate-limit-draft6 and -draft7 ("malformed") are rlconform's,
// which reads neither form (docs/cards.md).
func TestExpressRateLimitDraftFields(t *testing.T) {
	red := startRedis(t)
	for _, tc := range []struct {
		draft  string
		fields []string // of the first answer
	}{
		{"draft-6", []string{"RateLimit-Policy: 5;w=60", "RateLimit-Limit: 5", "RateLimit-Remaining: 4", "RateLimit-Reset: 60"}},
		{"draft-7", []string{"RateLimit-Policy: 5;w=60", "RateLimit: limit=5, remaining=4, reset=60"}},
		{"draft-8", []string{`RateLimit-Policy: "5-in-1min"; q=5; w=60; pk=:`, `RateLimit: "5-in-1min"; r=4; t=60`}},
	} {
		t.Run(tc.draft, func(t *testing.T) {
			base := serveNode(t, "express.js", red.URL, "/", "CARD_DRAFT="+tc.draft, "CARD_WINDOW_MS=60000")
			user := "fields-" + tc.draft
			status, h := get(t, base, user)
			var got []string
			for _, k := range []string{"RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit"} {
				if v := h.Get(k); v != "" {
					got = append(got, k+": "+v)
				}
			}
			t.Logf("status %d, %s", status, strings.Join(got, " | "))
			for _, want := range tc.fields {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, want)
				}
				if !found {
					t.Errorf("no field %q among %q", want, got)
				}
			}
			for range 4 {
				get(t, base, user)
			}
			if status, h := get(t, base, user); status != 429 || h.Get("Retry-After") != "60" {
				t.Errorf("the sixth request: status %d, Retry-After %q; want 429 and 60", status, h.Get("Retry-After"))
			}
		})
	}
}
