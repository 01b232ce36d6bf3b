package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveSymfony starts cards/php/serve (php -S, 4 workers) with env and
// returns its base URL.
func serveSymfony(t *testing.T, redisURL string, env ...string) string {
	t.Helper()
	if _, err := exec.LookPath("php"); err != nil {
		t.Fatal("php is not installed: make cards-deps (scripts/ensure-cards) installs it")
	}
	serve, _ := filepath.Abs("../php/serve")
	cmd := exec.Command(serve)
	cmd.Env = append(os.Environ(), append(env, "RLCONFORM_REDIS_URL="+redisURL, "RLCONFORM_KEY_PREFIX=repro:", "CARD_CONFIG_DIR="+t.TempDir())...)
	base := serveCard(t, "php -S", cmd, syscall.SIGKILL, 15*time.Second, capabilities)
	return base
}

func post(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		t.Errorf("POST %s: status %d %v", url, resp.StatusCode, out)
	}
	return out
}

// burst sends n concurrent allow requests for each of users and returns
// how many each got allowed.
func burst(t *testing.T, base string, users []string, n int) map[string]int {
	var mu sync.Mutex
	allowed := map[string]int{}
	var wg sync.WaitGroup
	for _, u := range users {
		for range n {
			wg.Go(func() {
				out := post(t, base+"/rlc/v1/allow", map[string]string{"user_id": u})
				if out["allowed"] == true {
					mu.Lock()
					allowed[u]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return allowed
}

// raceRounds bounds the bursts a repro sends to meet a race.
const raceRounds = 5

// Symfony RateLimiter's factory without a lock factory gives every
// limiter a NoLock (RateLimiterFactory.php:48): workers that fetch a
// window at once all see its old count and all save it plus one, so a
// burst gets more than the limit through (symfony-*: core/concurrent-4,
// strict/same-millisecond-burst, strict/linearizable). With the lock the
// framework wires by default, exactly the limit.
func TestSymfonyNoLockRace(t *testing.T) {
	red := startRedis(t)
	for _, tc := range []struct {
		name string
		env  []string
		race bool
	}{
		{"no lock factory", []string{"CARD_POLICY=fixed_window"}, true},
		{"a Redis lock", []string{"CARD_POLICY=fixed_window", "CARD_LOCK=redis"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serveSymfony(t, red.URL, tc.env...)
			post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 5, "window_ms": 60000})
			// A race is met only sometimes (a burst of 12 on 4 workers
			// once let none through beyond 5): up to raceRounds bursts on
			// fresh users, each of which the lock must hold to 5.
			over := 0
			for round := range raceRounds {
				var users []string
				for _, u := range "abcdefgh" {
					users = append(users, fmt.Sprintf("%s-%d-%c", tc.name, round, u))
				}
				allowed := burst(t, base, users, 12)
				for _, u := range users {
					if allowed[u] > 5 {
						over++
					}
					if !tc.race && allowed[u] != 5 {
						t.Errorf("user %s: %d allowed of 12, want exactly 5", u, allowed[u])
					}
				}
				t.Logf("round %d: allowed of 12 concurrent requests, limit 5: %v", round+1, allowed)
				if tc.race && over > 0 {
					break
				}
			}
			if tc.race && over == 0 {
				t.Errorf("no user got more than 5 through in %d bursts: the race is gone", raceRounds)
			}
		})
	}
}

// Symfony's sliding window saves its state for (int) (windowEndAt +
// interval − now) seconds (SlidingWindow.php:77-80): truncated, so the
// key dies up to a second before the count stops weighing on the next
// window, and the next request finds no previous count (a fresh window):
// more requests get through than the weighted counter allows
// (symfony-sliding-window: core/sliding-expiry, strict/boundary-burst-epoch,
// strict/denied-not-logged, strict/lowered-limit, strict/differential).
// Right after the first request of a user, in a window of 1s, the count
// weighs until about 2s from now; the key's TTL is 1s.
func TestSymfonySlidingWindowTTLTruncated(t *testing.T) {
	red := startRedis(t)
	base := serveSymfony(t, red.URL, "CARD_POLICY=sliding_window")
	post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 5, "window_ms": 1000})
	ctx := context.Background()
	keys, _ := red.Client.Keys(ctx, "repro:*").Result()
	for _, k := range keys {
		red.Client.Del(ctx, k)
	}
	if out := post(t, base+"/rlc/v1/allow", map[string]string{"user_id": "u"}); out["allowed"] != true {
		t.Fatalf("the first request: %v", out)
	}
	keys, err := red.Client.Keys(ctx, "repro:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys under repro: %v, %v: want the one state", keys, err)
	}
	pttl, _ := red.Client.PTTL(ctx, keys[0]).Result()
	t.Logf("key %s: TTL %v; its count weighs until the end of the next window, about 2s from now", keys[0], pttl)
	if pttl > 1100*time.Millisecond {
		t.Errorf("TTL %v: no longer truncated to whole seconds", pttl)
	}
}

// Symfony RateLimiter has no read-only query: consume(0), which the card
// asks for what remains, reserves 0 tokens, and reserve() saves the state
// it fetched or made (FixedWindowLimiter.php:59-61, :82;
// TokenBucketLimiter.php:63-66, :93): asked about a user it has never
// seen, it makes a window (or bucket) anchored at the query's instant,
// which the next request then fills (symfony-fixed-window and
// symfony-token-bucket: strict/differential, where a random schedule asks
// before it requests).
func TestSymfonyRemainingOpensAWindow(t *testing.T) {
	red := startRedis(t)
	ctx := context.Background()
	for _, policy := range []string{"fixed_window", "token_bucket"} {
		t.Run(policy, func(t *testing.T) {
			base := serveSymfony(t, red.URL, "CARD_POLICY="+policy)
			post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 5, "window_ms": 60000})
			user := "never-requested-" + policy
			out := post(t, base+"/rlc/v1/remaining", map[string]string{"user_id": user})
			if out["remaining"] != float64(5) {
				t.Fatalf("remaining of a new user: %v", out)
			}
			keys, _ := red.Client.Keys(ctx, "repro:*").Result()
			found := false
			for _, k := range keys {
				v, _ := red.Client.Get(ctx, k).Result()
				if strings.Contains(v, user) {
					found = true
					t.Logf("after one remaining query: %s holds the new user's state", k)
				}
			}
			if !found {
				t.Errorf("no state saved for %q after consume(0): the remaining query no longer writes (keys %v)", user, keys)
			}
		})
	}
}

// Every Symfony policy takes a negative cost: consume(-2) passes the
// check for more tokens than the limit (FixedWindowLimiter.php:52,
// TokenBucketLimiter.php:56; the sliding window has none) and adds -2
// hits (Window.php:60, SlidingWindow.php:89) or 2 tokens
// (TokenBucketLimiter.php:72): a user who spent 3 of 3 gets 2 more
// (symfony-*: robust/cost-negative). A window's hit count is serialized
// as an unsigned 32-bit integer (Window.php:91, SlidingWindow.php:111), so
// a fresh user's -2 is read back as 4294967294 hits: that user is refused
// for the rest of the window.
func TestSymfonyNegativeCost(t *testing.T) {
	red := startRedis(t)
	for _, policy := range []string{"fixed_window", "sliding_window", "token_bucket"} {
		t.Run(policy, func(t *testing.T) {
			base := serveSymfony(t, red.URL, "CARD_POLICY="+policy)
			post(t, base+"/rlc/v1/configure", map[string]int{"max_requests": 3, "window_ms": 60000})
			var got []bool
			for _, n := range []int{1, 1, 1, -2, 1, 1, 1} {
				out := post(t, base+"/rlc/v1/allow", map[string]any{"user_id": "spent-" + policy, "cost": n})
				got = append(got, out["allowed"] == true)
			}
			t.Logf("costs 1 1 1 -2 1 1 1: %v", got)
			if fmt.Sprint(got) != fmt.Sprint([]bool{true, true, true, true, true, true, false}) {
				t.Errorf("answers %v: the cost -2 no longer refunds two requests", got)
			}
			post(t, base+"/rlc/v1/allow", map[string]any{"user_id": "fresh-" + policy, "cost": -2})
			out := post(t, base+"/rlc/v1/allow", map[string]any{"user_id": "fresh-" + policy})
			t.Logf("a fresh user's request after a cost of -2: %v", out)
			if locked := out["allowed"] == false; locked != (policy != "token_bucket") {
				t.Errorf("a fresh user after a cost of -2: %v", out)
			}
		})
	}
}
