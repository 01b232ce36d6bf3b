package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const epochMs = 1_767_225_600_000

// answers runs allow at each offset (ms) and returns the answers.
func answers(a interface {
	Allow(time.Time, string) (bool, error)
}, user string, offsets ...int64) []bool {
	var out []bool
	for _, ms := range offsets {
		ok, _ := a.Allow(time.UnixMilli(epochMs+ms), user)
		out = append(out, ok)
	}
	return out
}

func profile(t *testing.T, spec string, n int, w time.Duration) Replayable {
	t.Helper()
	sp, err := ParseVariant(spec)
	require.NoError(t, err)
	p, err := sp.New(n, w)
	require.NoError(t, err)
	return p
}

func TestFixedWindowEpoch(t *testing.T) {
	f := &fixedWindow{align: "epoch", n: 2, w: 1000}
	// 2 just before the edge at 1000 and 2 just after: all pass.
	assert.Equal(t, []bool{true, true, false, true, true, false}, answers(f, "u", 998, 999, 999, 1000, 1001, 1999))
	n, err := f.Remaining(time.UnixMilli(epochMs+1500), "u")
	assert.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Equal(t, 500*time.Millisecond, f.RetryAfter(time.UnixMilli(epochMs+1500), "u"))
}

func TestFixedWindowFirstHitCountingDenied(t *testing.T) {
	f := &fixedWindow{align: "first-hit", countDenied: true, n: 2, w: 1000}
	// The window opens at 100; denied requests count; a new one opens at the
	// first request at or after 1100.
	assert.Equal(t, []bool{true, true, false, true}, answers(f, "u", 100, 500, 900, 1100))
	g := &fixedWindow{align: "first-hit", n: 2, w: 1000}
	assert.Equal(t, []bool{true, true, false, false, true}, answers(g, "u", 100, 1099, 1099, 1099, 1100))
}

func TestFixedWindowFirstGrid(t *testing.T) {
	f := profile(t, "fixed-window:align=first-grid", 2, time.Second)
	// The grid is anchored at 100: windows [100, 1100), [1100, 2100), ...
	assert.Equal(t, []bool{true, true, false, true, true, false}, answers(f, "u", 100, 1000, 1099, 1100, 2000, 2099))
	// A whole window [2100, 3100) with no counted request: forgotten at
	// 1100+2000 = 3100, a new grid anchored at 3500.
	assert.Equal(t, []bool{true, true, false, true}, answers(f, "u", 3500, 4000, 4499, 4500))
	assert.Equal(t, 2000*time.Millisecond, f.Lifetime(time.UnixMilli(epochMs+4500), "u"), "the anchor lives a window past the count's window")
}

func TestSlidingCounter(t *testing.T) {
	s := profile(t, "sliding-counter", 4, time.Second)
	// 4 late in window 0; at 1500 the estimate is 4*0.5 = 2: 2 more pass.
	assert.Equal(t, []bool{true, true, true, true}, answers(s, "u", 900, 900, 900, 900))
	n, _ := s.Remaining(time.UnixMilli(epochMs+1500), "u")
	assert.Equal(t, 2, n)
	assert.Equal(t, []bool{true, true, false}, answers(s, "u", 1500, 1500, 1500))
	// At 1000 exactly the estimate is 4: denied; at 1001 it is 3.996: allowed.
	s2 := profile(t, "sliding-counter", 4, time.Second)
	answers(s2, "u", 999, 999, 999, 999)
	assert.Equal(t, time.Millisecond, s2.RetryAfter(time.UnixMilli(epochMs+1000), "u"))
	assert.Equal(t, []bool{false, true}, answers(s2, "u", 1000, 1001))
}

// admit=at-most allows while the estimate including this request is at
// most N: one fewer than admit=below where the weighted count is a
// fraction, the same where it is whole.
func TestSlidingCounterAtMost(t *testing.T) {
	s := profile(t, "sliding-counter:admit=at-most", 4, time.Second)
	// 4 late in window 0; at 1500 the estimate is 4*0.5 = 2, so 2+1 and
	// 3+1 are at most 4: 2 more pass, as with admit=below.
	answers(s, "u", 900, 900, 900, 900)
	assert.Equal(t, []bool{true, true, false}, answers(s, "u", 1500, 1500, 1500))
	// At 1250 the estimate is 3: 3+1 <= 4 passes, then 4+1 does not.
	s = profile(t, "sliding-counter:admit=at-most", 4, time.Second)
	answers(s, "u", 900, 900, 900, 900)
	n, _ := s.Remaining(time.UnixMilli(epochMs+1250), "u")
	assert.Equal(t, 1, n)
	assert.Equal(t, []bool{true, false}, answers(s, "u", 1250, 1250))
	// At 1400 the estimate is 2.4: below allows 2.4 and 3.4 (2 more), at-most
	// 3.4 only (4.4 is over 4).
	below, atMost := profile(t, "sliding-counter", 4, time.Second), profile(t, "sliding-counter:admit=at-most", 4, time.Second)
	answers(below, "u", 900, 900, 900, 900)
	answers(atMost, "u", 900, 900, 900, 900)
	assert.Equal(t, []bool{true, true, false}, answers(below, "u", 1400, 1400, 1400))
	assert.Equal(t, []bool{true, false}, answers(atMost, "u", 1400, 1400))
	// Denied at 1401: 4*0.599 + 1 + 1 = 4.396; the first e where 4*(1000-e) + 2000 <= 4000
	// is e = 500.
	assert.Equal(t, 99*time.Millisecond, atMost.RetryAfter(time.UnixMilli(epochMs+1401), "u"))
	assert.Equal(t, []bool{false, true}, answers(atMost, "u", 1499, 1500))
}

func TestGCRA(t *testing.T) {
	g := &gcraModel{n: 4, w: 1000} // one every 250ms, burst 4
	assert.Equal(t, []bool{true, true, true, true, false}, answers(g, "u", 0, 0, 0, 0, 0))
	assert.Equal(t, 250*time.Millisecond, g.RetryAfter(time.UnixMilli(epochMs), "u"))
	assert.Equal(t, []bool{false, true, false, true}, answers(g, "u", 249, 250, 250, 500))
	// A fractional interval is exact: 1000/3 ms.
	h := profile(t, "gcra:burst=1", 3, time.Second)
	assert.Equal(t, []bool{true, false, true, false, true}, answers(h, "u", 0, 333, 334, 667, 668))
}

func TestTokenBucketInterval(t *testing.T) {
	b := profile(t, "token-bucket:capacity=3,refill=interval", 2, time.Second)
	// Full at 0 (3 tokens); 2 more at 1000, 2000 (capped at 3).
	assert.Equal(t, []bool{true, true, true, false, true, true, false}, answers(b, "u", 0, 1, 2, 999, 1000, 1500, 1999))
	n, _ := b.Remaining(time.UnixMilli(epochMs+2000), "u")
	assert.Equal(t, 2, n)
}

// renew=any: a query, a refused request or a request of cost 0 keeps a
// first-grid user's grid as a counted request does (python limits' sliding
// window counter, whose scripts shift the windows at every call); by
// default a window with no counted request forgets it. The schedule is
// the one that showed it on limits 5.8.0 against Redis.
func TestSlidingCounterRenewAny(t *testing.T) {
	const spec = "sliding-counter:align=first-grid"
	at := func(ms int64) time.Time { return time.UnixMilli(epochMs + ms) }
	for _, c := range []struct {
		name, params string
		keep         func(p Replayable) // in [1000, 2000): the grid's second window
		at3100       []bool
	}{
		{"a query, counted", "", func(p Replayable) { _, _ = p.Remaining(at(1500), "u") }, []bool{false, false}},
		{"a query, any", ",renew=any", func(p Replayable) { _, _ = p.Remaining(at(1500), "u") }, []bool{true, false}},
		{"a refused request, any", ",renew=any", func(p Replayable) { _, _ = p.(Weighted).AllowN(at(1500), "u", 2) }, []bool{true, false}},
		{"cost 0, any", ",renew=any", func(p Replayable) { _, _ = p.(Weighted).AllowN(at(1500), "u", 0) }, []bool{true, false}},
		{"nothing, any", ",renew=any", func(Replayable) {}, []bool{false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := profile(t, spec+c.params, 2, time.Second)
			assert.Equal(t, []bool{true, true}, answers(p, "u", 0, 0))
			c.keep(p)
			// Kept: window [2000, 3000) has prev 0; at 3100 the estimate is
			// 2×0.9 = 1.8, one more fits. Forgotten: a grid anchored at
			// 2300 whose first window holds 2 at 3100.
			assert.Equal(t, []bool{true, true}, answers(p, "u", 2300, 2300))
			assert.Equal(t, c.at3100, answers(p, "u", 3100, 3100))
		})
	}
	// A query opens no grid, and forgets a lapsed one; a request of cost
	// 0 opens one.
	p := profile(t, spec+",renew=any", 2, time.Second)
	_, _ = p.Remaining(at(0), "u")
	assert.Empty(t, p.StateKey("u"))
	_, _ = p.(Weighted).AllowN(at(100), "u", 0)
	assert.Equal(t, fmt.Sprintf("%d/0/0/0", epochMs+100), p.StateKey("u"), "cost 0 anchors at 100")
	_, _ = p.Remaining(at(2100), "u")
	assert.Empty(t, p.StateKey("u"), "lapsed at 2100: forgotten")
	v, err := ParseVariant(spec + ",renew=any")
	require.NoError(t, err)
	assert.True(t, v.QueryWrites())
	assert.Equal(t, "sliding-counter:admit=below,align=first-grid,count-denied=false", mustComplete(t, spec).String(), "renew=counted is left out")
}

func mustComplete(t *testing.T, spec string) Variant {
	t.Helper()
	v, err := ParseVariant(spec)
	require.NoError(t, err)
	return v
}
