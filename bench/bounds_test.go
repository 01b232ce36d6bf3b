package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
)

// specs are the profiles the randomized tests draw from, every parameter
// that changes a bound.
var specs = []string{
	"sliding-log",
	"fixed-window:align=epoch", "fixed-window:align=epoch,count-denied=true,query=read",
	"fixed-window:align=first-grid", "fixed-window:align=first-hit", "fixed-window:align=first-hit,count-denied=true,query=read",
	"sliding-counter:align=epoch", "sliding-counter:align=epoch,count-denied=true,admit=at-most",
	"sliding-counter:align=first-grid", "sliding-counter:align=first-grid,count-denied=true",
	"fixed-window:align=go-zero", "sliding-counter:align=go-zero,count-denied=true,admit=at-most",
	"gcra", "gcra:burst=2", "gcra:burst=7",
	"token-bucket", "token-bucket:capacity=3", "token-bucket:refill=interval", "token-bucket:capacity=2,refill=interval",
}

// history is the calls of a limiter deciding as p on a clock offset from
// the grader's, with calls in flight around each decision.
type history struct {
	calls []Decision
	start time.Time
	end   time.Duration
}

// makeHistory decides n calls of 3 users on p, one after the other at
// instants x (their real order), each read on a clock offset by o (|o| <
// 1ms) and truncated to the millisecond by the model: the instant acted on
// lies in the call's admissible span, as the real-time rule says. Each
// call was sent up to 2ms before x and answered up to 2ms after; a few
// failed (after taking effect). Now and then the user's calls pause.
func makeHistory(t *testing.T, r *rand.Rand, p model.Profile, n int, gap time.Duration) history {
	t.Helper()
	// A start anywhere within a millisecond and a window: the epoch's
	// edges fall anywhere in the run.
	start := time.Unix(1_700_000_000, 0).Add(time.Duration(r.Int64N(int64(time.Minute))))
	offset := time.Duration(r.Int64N(int64(2*time.Millisecond)-1)) - time.Millisecond + 1
	var h history
	h.start = start
	x := time.Duration(0)
	for range n {
		x += time.Duration(r.Int64N(int64(gap)))
		if r.IntN(25) == 0 { // now and then an idle spell: a bucket fills, a window passes
			x += time.Duration(r.Int64N(int64(2 * p.Window())))
		}
		user := int32(r.IntN(3))
		ok, err := p.Allow(start.Add(x+offset), fmt.Sprint("u", user))
		require.NoError(t, err)
		o := Denied
		if ok {
			o = Allowed
		}
		if r.IntN(40) == 0 {
			o = Errored // it took effect; its answer was lost
		}
		sent := x - time.Duration(r.Int64N(int64(2*time.Millisecond)))
		ret := x + time.Duration(r.Int64N(int64(2*time.Millisecond)))
		h.calls = append(h.calls, call(user, o, sent, ret))
		h.end = max(h.end, ret)
	}
	return h
}

func profileOf(t *testing.T, spec string, n int, w time.Duration) model.Profile {
	t.Helper()
	p, err := model.MustVariant(spec).New(n, w)
	require.NoError(t, err)
	return p
}

// TestEveryProfileIsNeverFailedByItsOwnRules: for every profile, histories
// of its own model (deciding on a clock offset within the real-time rule,
// calls in flight around each decision) are never failed by the profile's
// rules: the bounds and the under-admission rules are sound. The same
// histories judged as a sliding log are failed for the profiles that admit
// more than a log (so the test could fail).
func TestEveryProfileIsNeverFailedByItsOwnRules(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	failedAsLog := map[string]int{}
	rounds := testtier.Runs(3000, 600) // the full tier judges them all
	for round := range rounds {
		spec := specs[round%len(specs)]
		n := 1 + r.IntN(6)
		w := time.Duration(2+r.IntN(60)) * ms
		gap := time.Duration(100+r.IntN(3000)) * time.Microsecond
		h := makeHistory(t, r, profileOf(t, spec, n, w), 200, gap)
		ex, err := Judge{Profile: model.MustVariant(spec), Limit: n, Window: w, Start: h.start}.Check(h.calls, h.end+time.Second)
		require.NoError(t, err)
		require.True(t, ex.Exact(), "round %d: %s, %d per %v, gaps up to %v: a correct history failed: overshoot %d %+v, under %d %+v",
			round, spec, n, w, gap, ex.Overshoot, ex.Worst, ex.UnderAdmitted, ex.WorstUnder)
		if !Check(h.calls, n, w, h.end+time.Second).Exact() {
			failedAsLog[spec]++
		}
	}
	assert.Zero(t, failedAsLog["sliding-log"])
	for _, spec := range []string{"fixed-window:align=epoch", "fixed-window:align=first-hit", "gcra:burst=7", "token-bucket:refill=interval", "sliding-counter:align=epoch"} {
		assert.Positive(t, failedAsLog[spec], "%s: no history of it is failed as a sliding log", spec)
	}
	t.Logf("histories failed as a sliding log, of %d/%d per profile: %v", rounds, len(specs), failedAsLog)
}

// TestOverAdmissionIsCaught: a limiter that admits more than its profile
// (a limit one higher, a burst one larger) is caught on the same kind of
// histories, and one that admits less is caught as under-admission.
func TestOverAdmissionIsCaught(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		claimed, made string
		limit         func(n int) int // the limit the limiter was made with
		over          bool
	}{
		{"sliding-log", "sliding-log", func(n int) int { return n + 1 }, true},
		{"fixed-window", "fixed-window", func(n int) int { return n + 1 }, true},
		{"fixed-window:align=first-hit", "fixed-window:align=first-hit", func(n int) int { return 2*n + 1 }, true},
		{"sliding-counter", "sliding-counter", func(n int) int { return n + 1 }, true},
		{"gcra", "gcra:burst=9", func(n int) int { return n }, true},
		{"token-bucket:capacity=3", "token-bucket:capacity=5", func(n int) int { return n }, true},
		{"token-bucket", "token-bucket", func(n int) int { return 2 * n }, true}, // twice the rate
		{"token-bucket:refill=interval", "token-bucket:refill=interval,capacity=9", func(n int) int { return n }, true},
		{"sliding-log", "sliding-log", func(n int) int { return n - 1 }, false},
		{"fixed-window", "fixed-window", func(n int) int { return n - 1 }, false},
		{"fixed-window:align=first-hit", "fixed-window:align=first-hit", func(n int) int { return n - 1 }, false},
		{"gcra:burst=3", "gcra:burst=2", func(n int) int { return n }, false},
		{"token-bucket", "token-bucket", func(n int) int { return n - 1 }, false},
		{"token-bucket:refill=interval", "token-bucket:refill=interval", func(n int) int { return n - 1 }, false},
		{"sliding-counter", "sliding-counter", func(n int) int { return n - 1 }, false},
	} {
		caught := 0
		rounds := testtier.Runs(100, 30) // the full tier judges them all
		for range rounds {
			n := 2 + r.IntN(4)
			w := time.Duration(20+r.IntN(40)) * ms
			h := makeHistory(t, r, profileOf(t, tc.made, tc.limit(n), w), 300, time.Duration(300+r.IntN(1500))*time.Microsecond)
			ex, err := Judge{Profile: model.MustVariant(tc.claimed), Limit: n, Window: w, Start: h.start}.Check(h.calls, h.end)
			require.NoError(t, err)
			if tc.over && ex.Overshoot > 0 || !tc.over && ex.UnderAdmitted > 0 {
				caught++
			}
		}
		assert.Greater(t, caught, rounds/2, "%s judged as %s: caught %d of %d", tc.made, tc.claimed, caught, rounds)
		t.Logf("%-45s judged as %-30s caught in %3d of %d histories", tc.made+fmt.Sprintf(" (limit %s)", map[bool]string{true: "raised", false: "lowered"}[tc.over]), tc.claimed, caught, rounds)
	}
}

// TestAFixedWindowOnGosGridIsJudgedOnIt: windows that time.Time.Truncate
// lays out (align=go-zero, counted from 0001-01-01) are judged on that
// grid, which for 700ms is not the epoch's (its edges are 200ms after
// the epoch's): N+1 early in each of them is caught in each, and N just
// before an edge and N just after is not, where the epoch's grid has all
// 2N in one window.
func TestAFixedWindowOnGosGridIsJudgedOnIt(t *testing.T) {
	w := 700 * ms
	start := time.Unix(1_700_000_000, 0).Truncate(w) // an edge of Go's grid
	require.Equal(t, int64(200*ms), start.UnixNano()%int64(w), "200ms after an edge of the epoch's")
	var over, right []Decision
	for k := range 3 {
		for i := range 4 { // 4 allowed early in each window, limit 3
			at := time.Duration(k)*w + 10*ms + time.Duration(i)*ms
			over = append(over, call(0, Allowed, at, at+500*time.Microsecond))
		}
	}
	for i := range 6 { // 3 late in the first window, 3 early in the next
		at := w - 50*ms + time.Duration(i)*ms
		if i >= 3 {
			at = w + 10*ms + time.Duration(i)*ms
		}
		right = append(right, call(0, Allowed, at, at+500*time.Microsecond))
	}
	judge := Judge{Profile: model.MustVariant("fixed-window:align=go-zero"), Limit: 3, Window: w, Start: start}
	ex, err := judge.Check(over, 3*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 3, ex.Overshoot)
	require.NotNil(t, ex.Worst)
	assert.Contains(t, ex.Worst.Rule, "at most 3 allowed in each window [kW, (k+1)W) of Go's zero time (time.Time.Truncate's): 4 in the 1 window(s) [+0.000ms, +700.000ms)")
	ex, err = judge.Check(right, 3*time.Second)
	require.NoError(t, err)
	assert.True(t, ex.Exact(), "%+v", ex.Worst)
	ex, err = Judge{Profile: model.MustVariant("fixed-window:align=epoch"), Limit: 3, Window: w, Start: start}.Check(right, 3*time.Second)
	require.NoError(t, err)
	assert.False(t, ex.Exact(), "on the epoch's grid 6 of them lie in one window")
}

// TestAFixedWindowOfNPlusOneIsCaughtAtEachEdge: the known edges of the
// epoch catch one request too many in a window, which no bound over a
// span shorter than the window can (a correct window admits 2N across
// an edge).
func TestAFixedWindowOfNPlusOneIsCaughtAtEachEdge(t *testing.T) {
	start := time.Unix(1_700_000_000, 0) // a whole second: windows of 100ms start at offsets 0, 100ms, ...
	var ds []Decision
	for k := range 3 {
		for i := range 4 { // 4 allowed early in each window, limit 3
			at := time.Duration(k)*100*ms + 10*ms + time.Duration(i)*ms
			ds = append(ds, call(0, Allowed, at, at+500*time.Microsecond))
		}
	}
	ex, err := Judge{Profile: model.MustVariant("fixed-window"), Limit: 3, Window: 100 * ms, Start: start}.Check(ds, 400*ms)
	require.NoError(t, err)
	assert.Equal(t, 3, ex.Overshoot)
	require.NotNil(t, ex.Worst)
	assert.Equal(t, 4, ex.Worst.Allowed)
	assert.Equal(t, 3, ex.Worst.Bound)
	assert.Contains(t, ex.Worst.Rule, "at most 3 allowed in each window [kW, (k+1)W) of the epoch: 4 in the 1 window(s) [+0.000ms, +100.000ms)")

	// Shifted so that each burst straddles an edge: 2 and 2 on either
	// side could be 2 in each window... and 4 in a window is proven only
	// when the spans say so.
	ex, err = Judge{Profile: model.MustVariant("fixed-window"), Limit: 3, Window: 100 * ms, Start: start.Add(-11*ms - 700*time.Microsecond)}.Check(ds, 400*ms)
	require.NoError(t, err)
	assert.Zero(t, ex.Overshoot, "%+v", ex.Worst)

	// With an unknown alignment, the same history is within 2N per window.
	ex, err = Judge{Profile: model.MustVariant("fixed-window:align=first-hit"), Limit: 3, Window: 100 * ms, Start: start}.Check(ds, 400*ms)
	require.NoError(t, err)
	assert.Zero(t, ex.Overshoot)
}

// TestABucketBurstIsBoundedByItsRate: a GCRA of burst 3 at 10 per second
// admits 3 at once and one more each 100ms: a fourth within 90ms of the
// first three is past its bound, a fourth 104ms after is not (3 + 10 ×
// 104ms/1s = 4.04, with the 3ms of slack in the spans).
func TestABucketBurstIsBoundedByItsRate(t *testing.T) {
	judge := Judge{Profile: model.MustVariant("gcra:burst=3"), Limit: 10, Window: time.Second}
	burst := []Decision{call(0, Allowed, 0, ms/2), call(0, Allowed, ms, 2*ms), call(0, Allowed, 2*ms, 3*ms)}
	ex, err := judge.Check(append(burst, call(0, Allowed, 90*ms, 91*ms)), time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, ex.Overshoot)
	require.NotNil(t, ex.Worst)
	assert.Equal(t, 4, ex.Worst.Allowed)
	assert.Equal(t, 3, ex.Worst.Bound)
	ex, err = judge.Check(append(burst, call(0, Allowed, 104*ms, 105*ms)), time.Second)
	require.NoError(t, err)
	assert.Zero(t, ex.Overshoot, "%+v", ex.Worst)

	// A denial with two tokens spent of three, whatever the timing, is an
	// under-admission; with all three spent, it is not.
	ex, err = judge.Check(append(slices.Clone(burst[:2]), call(0, Denied, 5*ms, 6*ms)), time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, ex.UnderAdmitted)
	require.NotNil(t, ex.WorstUnder)
	assert.Contains(t, ex.WorstUnder.Rule, "a GCRA of burst 3 refilled at 10 per 1s holds a token whatever the timing")
	ex, err = judge.Check(append(burst, call(0, Denied, 5*ms, 6*ms)), time.Second)
	require.NoError(t, err)
	assert.Zero(t, ex.UnderAdmitted)
}

func TestJudgeRefusesAnUnknownProfile(t *testing.T) {
	_, err := Judge{Profile: model.Variant{Name: "leaky"}, Limit: 1, Window: time.Second}.Check(nil, 0)
	assert.ErrorContains(t, err, "unknown profile")
	rules, err := Judge{Profile: model.MustVariant("sliding-counter"), Limit: 5, Window: time.Second}.Rules()
	require.NoError(t, err)
	assert.Contains(t, rules, "at most 5 allowed in each window [kW, (k+1)W) of the epoch")
}
