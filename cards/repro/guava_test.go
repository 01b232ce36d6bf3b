package repro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// guavaCard starts cards/java/serve guava (the JDK's HTTP server over
// Guava's RateLimiter, compiled by scripts/ensure-cards-java) and returns
// a client of it that sets each request's instant, as protocol v1's clock
// control does.
func guavaCard(t *testing.T) *clocked {
	t.Helper()
	javaClassPath(t)
	serve, _ := filepath.Abs("../java/serve")
	cmd := exec.Command(serve, "guava")
	cmd.Env = os.Environ()
	// A JVM starting on a loaded machine: give it a minute.
	base := serveCard(t, "cards/java/serve guava", cmd, syscall.SIGTERM, 60*time.Second, capabilities)
	return &clocked{t: t, base: base, origin: time.UnixMilli(1767225600000)}
}

// clocked sends protocol v1 requests at instants relative to origin.
type clocked struct {
	t      *testing.T
	base   string
	origin time.Time
}

// call POSTs body to path at origin+at and returns the status and answer.
func (c *clocked) call(path string, at time.Duration, body any) (int, map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Rlc-Now-Ms", strconv.FormatInt(c.origin.Add(at).UnixMilli(), 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// allow is tryAcquire(cost) for user at origin+at: "allowed", "denied",
// or the status and error.
func (c *clocked) allow(user string, cost int, at time.Duration) string {
	c.t.Helper()
	status, out := c.call("/rlc/v1/allow", at, map[string]any{"user_id": user, "cost": cost})
	switch {
	case status != http.StatusOK:
		return fmt.Sprintf("%d %v", status, out["error"])
	case out["allowed"] == true:
		return "allowed"
	}
	return "denied"
}

type step struct {
	user string
	cost int
	at   time.Duration
	want string
}

func (c *clocked) replay(steps []step) {
	c.t.Helper()
	for _, s := range steps {
		if got := c.allow(s.user, s.cost, s.at); got != s.want {
			c.t.Errorf("%s: tryAcquire(%d) at +%v = %s, want %s", s.user, s.cost, s.at, got, s.want)
		}
	}
}

// TestGuava confirms the guava card's deviations on one compiled card
// (javac takes seconds): each subtest configures it and uses users of its
// own.
func TestGuava(t *testing.T) {
	card := guavaCard(t)
	for _, tc := range []struct {
		name string
		run  func(*clocked)
	}{
		{"CostNeverThrottlesItself", guavaCostNeverThrottlesItself},
		{"StoresOneSecond", guavaStoresOneSecond},
		{"RefusesCostZero", guavaRefusesCostZero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *card
			c.t = t
			tc.run(&c)
		})
	}
}

// Guava's tryAcquire(n) asks only whether the next free ticket has come
// (RateLimiter.java:417, :427): the permits a request takes "never affect
// the throttling of the request itself" (its class javadoc); they
// push the next ticket n intervals on (SmoothRateLimiter.java:358-368).
// With 5 per minute (one every 12s), a fresh user's cost of 4 is allowed
// and the next request waits 48s; a cost of 7, above the limit, is
// allowed too: the profiles' cost=debt, which smooth-bursty, the card's
// profile, decides alike (graded as a GCRA that decides whole, it failed
// strict/cost-all-or-nothing, strict/cost-expiry-edge,
// strict/cost-never-fit).
func guavaCostNeverThrottlesItself(c *clocked) {
	c.call("/rlc/v1/configure", 0, map[string]int{"max_requests": 5, "window_ms": 60000})
	c.replay([]step{
		{"four", 4, 0, "allowed"},
		{"four", 1, 47999 * time.Millisecond, "denied"},
		{"four", 1, 48 * time.Second, "allowed"},
		{"seven", 7, 0, "allowed"},
		{"seven", 1, 83999 * time.Millisecond, "denied"},
		{"seven", 1, 84 * time.Second, "allowed"},
	})
}

// Guava's SmoothBursty starts with no stored permits
// (SmoothRateLimiter.java:290-301, "initial state") and stores at most
// one second of them (maxBurstSeconds 1.0, RateLimiter.java:138,
// SmoothRateLimiter.java:290-301), spent before the next ticket is pushed:
// a fresh limiter of 5 per minute allows 1 at once; idle long enough, it
// has stored 1/12 of a permit, and the request after next comes 11s
// later instead of 12s. With 5 per second, idle, it allows 6 at once
// (5 stored, then one more whose cost the next request pays). None of
// these is a whole GCRA burst that follows N: identify names the
// nearest, gcra:burst=1, for the minute windows it probes (notes/guava.md).
func guavaStoresOneSecond(c *clocked) {
	c.call("/rlc/v1/configure", 0, map[string]int{"max_requests": 5, "window_ms": 60000})
	c.replay([]step{
		{"m", 1, 0, "allowed"},
		{"m", 1, 0, "denied"},
		{"m", 1, 30 * time.Second, "allowed"},
		{"m", 1, 40999 * time.Millisecond, "denied"},
		{"m", 1, 41 * time.Second, "allowed"},
	})
	c.call("/rlc/v1/configure", 0, map[string]int{"max_requests": 5, "window_ms": 1000})
	steps := []step{{"s", 1, 0, "allowed"}, {"s", 1, 0, "denied"}}
	for range 6 {
		steps = append(steps, step{"s", 1, 5 * time.Second, "allowed"})
	}
	c.replay(append(steps, step{"s", 1, 5 * time.Second, "denied"}))
}

// Guava refuses a request of no permits: checkPermits throws
// IllegalArgumentException for 0 (RateLimiter.java:495-496), which the
// card answers 400, invalid input. It consumes nothing (guava:
// strict/cost-zero takes the error for a cost of 0 as honest;
// notes/guava.md).
func guavaRefusesCostZero(c *clocked) {
	c.call("/rlc/v1/configure", 0, map[string]int{"max_requests": 5, "window_ms": 60000})
	c.replay([]step{
		{"z", 0, 0, "400 Requested permits (0) must be positive"},
		{"z", 1, 0, "allowed"},
	})
}
