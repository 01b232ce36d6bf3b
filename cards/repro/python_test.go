package repro

import (
	"encoding/json"
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
	if err := exec.Command(venvPython, "-c", "import limits, flask_limiter").Run(); err != nil {
		t.Fatalf("cards/.venv has no limits and Flask-Limiter (%v): make cards-deps (scripts/ensure-cards-python) installs them", err)
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

// limits' moving window counts what remains from int(now - W), the
// window's start truncated to whole seconds (storage/redis.py:39-40,
// moving_window.lua:7), where hit() compares with the exact instant
// (acquire_moving_window.lua:2-8): up to a second of entries that no
// longer count are counted, and remaining is too low (limits-moving-window:
// core/remaining, strict/differential, strict/cost-differential).
func TestLimitsMovingWindowRemainingTruncated(t *testing.T) {
	var got struct {
		Remaining    int `json:"remaining"`
		AllowedAfter int `json:"allowed_after"`
	}
	pythonRepro(t, "remaining-truncated", &got)
	if got.Remaining != 4 || got.AllowedAfter != 5 {
		t.Errorf("remaining %d, then %d of 6 allowed: want 4 (the expired entry counted) and 5 (it does not count for hit)", got.Remaining, got.AllowedAfter)
	}
}

// limits' moving window reads the entry at index limit − cost
// (acquire_moving_window.lua:2): for a cost above the limit the index is
// negative, a fresh user has no such entry, and the request is allowed
// (limits-moving-window: strict/cost-never-fit).
func TestLimitsMovingWindowCostAboveLimit(t *testing.T) {
	var got struct {
		Allowed bool `json:"allowed"`
		Entries int  `json:"entries"`
	}
	pythonRepro(t, "cost-above-limit", &got)
	if !got.Allowed || got.Entries != 6 {
		t.Errorf("hit(cost=7) under a limit of 6: allowed %v, %d entries: want allowed, 6 (LTRIM to the limit)", got.Allowed, got.Entries)
	}
}

// limits' moving window builds one entry per unit of cost and LPUSHes
// them (acquire_moving_window.lua:10-14): a cost of 0 or -2 pushes none,
// and Redis refuses the script (limits-moving-window: strict/cost-zero,
// robust/cost-negative: an error, not a refusal as invalid input).
func TestLimitsMovingWindowCostZeroNegative(t *testing.T) {
	var got map[string]any
	pythonRepro(t, "cost-zero-negative", &got)
	for _, c := range []string{"0", "-2"} {
		if s, _ := got[c].(string); !strings.HasPrefix(s, "ResponseError") {
			t.Errorf("hit(cost=%s): %v, want Redis's ResponseError", c, got[c])
		}
	}
	if got["entries"] != float64(1) {
		t.Errorf("the log after them: %v entries, want the 1 made before", got["entries"])
	}
}

// limits' fixed window is INCRBY cost, then count <= limit
// (strategies.py:141-149, incr_expire.lua:3): a cost of -2 takes 2 off
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

// A limits RateLimitItem's key holds its amount and window
// (limits.py:105-122): after a change of the limit a user's log is
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
// (flask_limiter/wrappers.py:61-65) on limits' int(TTL + now)
// (limits/storage/redis.py:108), and Redis's TTL rounds the key's life to
// the nearest second: the reset is a second late when the TTL rounds up,
// and early (before the window ends: no quota then) when it rounds down,
// and so is Retry-After, int(reset − now) (extension.py:859-864): a
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
