package repro

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// venvPython is the interpreter of cards/.venv, where make cards-deps
// (scripts/ensure-cards-python) installs the Python cards' libraries as
// cards/python/requirements.txt pins them.
const venvPython = "../.venv/bin/python"

// pythonRepro runs testdata/python_repro.py's name on a Redis of its own
// and decodes the facts it prints into v.
func pythonRepro(t *testing.T, name string, v any) {
	t.Helper()
	if err := exec.Command(venvPython, "-c", "import limits, flask_limiter, pyrate_limiter, slowapi").Run(); err != nil {
		t.Fatalf("cards/.venv has no limits, Flask-Limiter, pyrate-limiter or slowapi (%v): make cards-deps (scripts/ensure-cards-python) installs them", err)
	}
	red := startRedis(t)
	// -B: no __pycache__ beside cards/python/flask_app.py, which it imports.
	out, err := exec.Command(venvPython, "-B", "testdata/python_repro.py", name, red.URL).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python_repro.py %s: %v\n%s", name, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("python_repro.py %s printed %q: %v", name, out, err)
	}
	t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
}

// limits' moving window takes a negative cost as an empty hit: -2 is not
// above the limit (acquire_moving_window.lua:6-8), no entry lies at index
// limit + 2 of a list trimmed to the limit (:10-14), no entries are made
// (:15-18), and the script answers true (:26): hit(cost=-2) by a user who
// spent 3 of 3 is allowed, and the log is unchanged (limits-moving-window:
// robust/cost-negative).
func TestLimitsMovingWindowCostNegative(t *testing.T) {
	var got struct {
		Allowed bool `json:"allowed"`
		Entries int  `json:"entries"`
		After   bool `json:"after"`
	}
	pythonRepro(t, "cost-negative", &got)
	if !got.Allowed || got.Entries != 3 || got.After {
		t.Errorf("hit(cost=-2) after 3 of 3: allowed %v, %d entries, next hit allowed %v: want allowed, 3, denied", got.Allowed, got.Entries, got.After)
	}
}

// limits' fixed window is INCRBY cost, then count <= limit
// (strategies.py:156-163, incr_expire.lua:3): a cost of -2 takes 2 off
// the count, and a user who spent 3 of 3 gets 2 more
// (limits-fixed-window: robust/cost-negative).
func TestLimitsFixedWindowNegativeCost(t *testing.T) {
	var got struct {
		Answers []bool `json:"answers"`
	}
	pythonRepro(t, "negative-refund", &got)
	want := []bool{true, true, true, true, true, true, false}
	if len(got.Answers) != len(want) {
		t.Fatalf("answers %v", got.Answers)
	}
	for i := range want {
		if got.Answers[i] != want[i] {
			t.Errorf("costs 1 1 1 -2 1 1 1 under 3: answers %v, want %v (the -2 refunds two)", got.Answers, want)
			break
		}
	}
}

// limits' sliding window counter refuses only when the weighted count
// plus the cost is above the limit (acquire_sliding_window.lua:31-35),
// then INCRBYs the cost (:38-39): a cost of -2 takes two off the current
// count, and a user who spent 3 of 3 gets 2 more
// (limits-sliding-window-counter: robust/cost-negative).
func TestLimitsSlidingWindowNegativeCost(t *testing.T) {
	var got struct {
		Answers []bool `json:"answers"`
	}
	pythonRepro(t, "sliding-negative-refund", &got)
	want := []bool{true, true, true, true, true, true, false}
	if fmt.Sprint(got.Answers) != fmt.Sprint(want) {
		t.Errorf("costs 1 1 1 -2 1 1 1 under 3: answers %v, want %v (the -2 refunds two)", got.Answers, want)
	}
}

// A limits RateLimitItem's key holds its amount and window
// (limits.py:106-124): after a change of the limit a user's log is
// another key, empty, so a user with 5 entries under 6 gets 2 more
// under 2 (limits-moving-window, as a sliding log: core/reconfigure,
// strict/lowered-limit, strict/raised-limit).
func TestLimitsKeyHoldsTheRate(t *testing.T) {
	var got struct {
		Keys    []string `json:"keys"`
		Allowed int      `json:"allowed_under_2"`
	}
	pythonRepro(t, "reconfigure-fresh", &got)
	if len(got.Keys) != 2 || got.Keys[0] == got.Keys[1] || got.Allowed != 2 {
		t.Errorf("keys %v, %d allowed under the new limit of 2: want two keys and 2 allowed", got.Keys, got.Allowed)
	}
}

// Flask-Limiter's X-RateLimit-Reset is int(get_expiry + 1)
// (flask_limiter/_extension.py:93-97) on limits' TTL + now
// (limits/storage/redis.py:286-293), and Redis's TTL rounds the key's life to
// the nearest second: the reset is a second late when the TTL rounds up,
// and early (before the window ends: no quota then) when it rounds down,
// and so is Retry-After, int(reset − now) (_extension.py:927-932): a
// client that waits it out is refused again (flask-limiter:
// http/ratelimit-fields; http/retry-after, at its late phase: a burst as a
// window opens is told the truth, where the TTL rounds up).
func TestFlaskLimiterResetRounded(t *testing.T) {
	var got map[string]struct {
		Status     int     `json:"status"`
		Reset      int     `json:"reset"`
		RetryAfter int     `json:"retry_after"`
		Now        float64 `json:"now"`
		Ends       float64 `json:"ends"`
	}
	pythonRepro(t, "flask-reset", &got)
	late, early := got["late"], got["early"]
	if late.Status != 429 || early.Status != 429 {
		t.Fatalf("the 6th request of 5 per 10s: statuses %d and %d, want 429", late.Status, early.Status)
	}
	if want := int(math.Ceil(late.Ends)); late.Reset != want+1 {
		t.Errorf("a window ending at %.1f: X-RateLimit-Reset %d, want %d (a second after the end rounded up)", late.Ends, late.Reset, want+1)
	}
	if float64(early.Reset) >= early.Ends || early.Now+float64(early.RetryAfter) >= early.Ends {
		t.Errorf("a window ending at %.1f, refused at %.1f: X-RateLimit-Reset %d and Retry-After %d, want both before the window ends", early.Ends, early.Now, early.Reset, early.RetryAfter)
	}
}

// pyrate-limiter's try_acquire(blocking=False) tries the Limiter's lock
// without waiting (limiter.py:588, :75-79) and answers False when another
// thread holds it (:417-421): a fresh user is refused while another
// request is being decided, whatever the bucket holds (pyrate-limiter:
// core/concurrent-4, strict/same-millisecond-burst,
// strict/shared-store-concurrent, strict/config-range, strict/linearizable,
// strict/cost-concurrent: fewer allowed than the limit).
func TestPyrateRefusesWhileLocked(t *testing.T) {
	var got struct {
		WhileHeld bool `json:"while_held"`
		After     bool `json:"after"`
		Entries   int  `json:"entries"`
	}
	pythonRepro(t, "pyrate-lock-busy", &got)
	if got.WhileHeld || !got.After || got.Entries != 1 {
		t.Errorf("a fresh user while the lock is held: %v, after: %v, %d entries: want refused, then allowed, 1 entry", got.WhileHeld, got.After, got.Entries)
	}
}

// pyrate-limiter's RedisBucket stamps an item with its process's clock
// (redis_bucket.py:105-107) and counts entries from now − W up to now
// (ZCOUNT, :36): entries stamped later than the caller's now are not
// counted, so a request stamped 1 ms before five others that reached
// Redis first is allowed: six in one window (pyrate-limiter:
// strict/linearizable, strict/reset-race, strict/cost-concurrent: more
// allowed than the limit across instances).
func TestPyrateLaterStampsUncounted(t *testing.T) {
	var got struct {
		First     []bool `json:"first"`
		LateStamp bool   `json:"late_stamp"`
		After     bool   `json:"after"`
		Entries   int    `json:"entries"`
	}
	pythonRepro(t, "pyrate-stamp-order", &got)
	if len(got.First) != 5 || !got.LateStamp || got.After || got.Entries != 6 {
		t.Errorf("5 at 2000, then one stamped 1999, then one at 2001 (limit 5/s): %v, %v, %v, %d entries: want all 5, allowed, denied, 6", got.First, got.LateStamp, got.After, got.Entries)
	}
	for _, a := range got.First {
		if !a {
			t.Errorf("the first 5 at 2000: %v, want all allowed", got.First)
			break
		}
	}
}

// slowapi's X-RateLimit-Reset is str(1 + get_window_stats()[0])
// (slowapi/extension.py:387-399), written for an int; limits 5's fixed
// window answers the key's TTL + time.time(), a float
// (limits/storage/redis.py:286-293): the header is a float, which no
// client reads as the integer epoch second it is named for (slowapi:
// http/ratelimit-fields: the fields are malformed).
func TestSlowapiResetIsAFloat(t *testing.T) {
	var got struct {
		Statuses   []int  `json:"statuses"`
		Reset      string `json:"reset"`
		RetryAfter string `json:"retry_after"`
	}
	pythonRepro(t, "slowapi-reset", &got)
	if fmt.Sprint(got.Statuses) != "[200 200 200 200 200 429]" {
		t.Fatalf("6 requests under 5 per 10s: statuses %v", got.Statuses)
	}
	if !strings.Contains(got.Reset, ".") {
		t.Errorf("X-RateLimit-Reset %q: want a float (the fraction of time.time())", got.Reset)
	}
}
