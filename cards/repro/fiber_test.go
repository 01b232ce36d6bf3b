package repro

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	fiber2 "github.com/gofiber/fiber/v2"
	limiter2 "github.com/gofiber/fiber/v2/middleware/limiter"
	utils2 "github.com/gofiber/fiber/v2/utils"
	fiber3 "github.com/gofiber/fiber/v3"
	limiter3 "github.com/gofiber/fiber/v3/middleware/limiter"
	utils3 "github.com/gofiber/utils/v2"
)

// fiberApp is a Fiber app behind its limiter middleware (N 2, Expiration
// 1s, the X-User header the key), as the fiber cards serve it: send makes
// one request as user and returns its status and Retry-After; clock reads
// the library's own clock, the cached Unix second its limiter decides on.
type fiberApp struct {
	name  string
	send  func(t *testing.T, user string) (int, string)
	clock func() uint32
}

func fiberApps(sliding bool) []fiberApp {
	app2 := fiber2.New()
	var mw2 limiter2.LimiterHandler = limiter2.FixedWindow{}
	var mw3 limiter3.Handler = limiter3.FixedWindow{}
	if sliding {
		mw2, mw3 = limiter2.SlidingWindow{}, limiter3.SlidingWindow{}
	}
	app2.Use(limiter2.New(limiter2.Config{Max: 2, Expiration: time.Second, LimiterMiddleware: mw2,
		KeyGenerator: func(c *fiber2.Ctx) string { return c.Get("X-User") }}))
	app2.Get("/", func(c *fiber2.Ctx) error { return c.SendString("ok") })
	app3 := fiber3.New()
	app3.Use(limiter3.New(limiter3.Config{Max: 2, Expiration: time.Second, LimiterMiddleware: mw3,
		KeyGenerator: func(c fiber3.Ctx) string { return c.Get("X-User") }}))
	app3.Get("/", func(c fiber3.Ctx) error { return c.SendString("ok") })
	return []fiberApp{
		{"v2", func(t *testing.T, user string) (int, string) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("X-User", user)
			resp, err := app2.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("Retry-After")
		}, func() uint32 { return atomic.LoadUint32(&utils2.Timestamp) }},
		{"v3", func(t *testing.T, user string) (int, string) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("X-User", user)
			resp, err := app3.Test(req, fiber3.TestConfig{})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("Retry-After")
		}, utils3.Timestamp},
	}
}

// nextSecond polls the library's clock until it reads a new second (it
// ticks once a second) and returns that second and when it came.
func nextSecond(t *testing.T, clock func() uint32) (uint32, time.Time) {
	t.Helper()
	was := clock()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s := clock(); s != was {
			return s, time.Now()
		}
	}
	t.Fatalf("the library's clock stayed at %d for 3s", was)
	return 0, time.Time{}
}

// lateIn polls until at least d of the library's second s has passed
// (s began at began) and says whether its clock still reads s.
func lateIn(clock func() uint32, s uint32, began time.Time, d time.Duration) bool {
	for time.Since(began) < d && clock() == s {
		time.Sleep(time.Millisecond)
	}
	return clock() == s
}

// Fiber's limiters decide on a cached Unix second that a ticker started
// with the process refreshes once a second (fiber/v2 utils/time.go:18-31,
// gofiber/utils/v2 time.go:24-45): it changes at the process's own phase
// of the second, not at the epoch's, and a window "opened" by a request
// ends when that clock reaches exp = its second + Expiration
// (limiter_fixed.go:52-61 in v2, :64-73 in v3). With Expiration 1s, a
// window opened late in the library's second ends at its next tick, well
// before a second after the first request (fiber2-fixed, fiber3-fixed:
// every strict/ spec the cards fail, which grade a window of 1s opened by
// the first request, or the epoch's seconds). The windows are whole
// seconds of the library's clock: an honest fixed window on that clock,
// whose phase no answer tells a client.
func TestFiberWindowsEndAtTheLibrarysTick(t *testing.T) {
	for _, app := range fiberApps(false) {
		t.Run(app.name, func(t *testing.T) {
			for try := 0; ; try++ {
				s, began := nextSecond(t, app.clock)
				phase := began.Sub(began.Truncate(time.Second))
				if !lateIn(app.clock, s, began, 700*time.Millisecond) {
					continue // a loaded machine passed the second by
				}
				user := "late-" + app.name + "-" + began.Format("150405.000")
				first := time.Now()
				codes := []int{}
				for range 3 {
					code, _ := app.send(t, user)
					codes = append(codes, code)
				}
				if app.clock() != s {
					if try < 3 {
						continue
					}
					t.Fatal("the library's second ended during the burst 4 times")
				}
				next, _ := nextSecond(t, app.clock)
				code, _ := app.send(t, user)
				t.Logf("the library's clock ticks %v after each epoch second; a burst %v into its second %d: %v; at its next second %d, %v after the first request: %d",
					phase.Round(time.Millisecond), first.Sub(began).Round(time.Millisecond), s, codes, next, time.Since(first).Round(time.Millisecond), code)
				if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
					t.Fatalf("the burst: %v, want 200 200 429", codes)
				}
				if code != 200 {
					t.Errorf("at the library's next second: %d, want 200 (the window ends at its tick)", code)
				}
				return
			}
		})
	}
}

// Fiber's sliding window weighs the previous window by resetInSec /
// expiration, in whole seconds of its clock (limiter_sliding.go:55-85 in
// v2, :69-79 and :167-189 in v3): with Expiration 1s that weight is
// always 1, so the previous second counts whole for all of the next one,
// where a weighted counter lets requests back in as it slides
// (fiber2-sliding, fiber3-sliding: strict/boundary-burst-first,
// strict/same-millisecond-burst). And a refusal's Retry-After is
// resetInSec, the time until the current window ends (v2 :111, v3
// :109), when the count of that window still weighs whole: a client
// that waits it out is refused again (http/retry-after).
func TestFiberSlidingWindowWeighsWholeSeconds(t *testing.T) {
	for _, app := range fiberApps(true) {
		t.Run(app.name, func(t *testing.T) {
			s, began := nextSecond(t, app.clock)
			users := []string{"retry-" + app.name + began.Format("150405.000"), "weight-" + app.name + began.Format("150405.000")}
			retryAfter := ""
			for _, u := range users {
				for i, want := range []int{200, 200, 429} {
					code, ra := app.send(t, u)
					if code != want {
						t.Fatalf("%s's request %d: %d, want %d", u, i+1, code, want)
					}
					retryAfter = ra
				}
			}
			if app.clock() != s {
				t.Fatal("the library's second ended during the bursts (a loaded machine): run again")
			}
			next, nextBegan := nextSecond(t, app.clock)
			atRetry, _ := app.send(t, users[0])
			if !lateIn(app.clock, next, nextBegan, 800*time.Millisecond) {
				t.Fatal("a loaded machine passed the library's second by: run again")
			}
			late, _ := app.send(t, users[1])
			t.Logf("3 requests at the library's second %d (limit 2): Retry-After %q; at its next second: %d; %v into that second: %d",
				s, retryAfter, atRetry, time.Since(nextBegan).Round(time.Millisecond), late)
			if retryAfter != "1" || atRetry != 429 {
				t.Errorf("Retry-After %q, then %d at the next second: want 1 and 429 (Retry-After is too short)", retryAfter, atRetry)
			}
			// A weighted counter: 3 × (1000−800)/1000 = 0.6 count then, and
			// a request is allowed; Fiber weighs the 3 whole.
			if late != 429 {
				t.Errorf("%d, 800ms into the next second: want 429 (the previous second no longer counts whole)", late)
			}
		})
	}
}
