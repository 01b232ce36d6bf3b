package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the fake clock a window of align=first-second opens at the request's
// instant truncated to the second: [1000, 2000) for a request at 1500,
// where first-hit's is [1500, 2500).
func TestFirstSecondOnTheGivenClock(t *testing.T) {
	p, err := MustVariant("fixed-window:align=first-second").New(1, time.Second)
	require.NoError(t, err)
	for _, c := range []struct {
		at      int64
		allowed bool
	}{{1500, true}, {1999, false}, {2000, true}, {2999, false}, {3700, true}} {
		ok, err := p.Allow(at(c.at), "u")
		require.NoError(t, err)
		assert.Equal(t, c.allowed, ok, "at %d", c.at)
	}
	assert.Equal(t, 300*time.Millisecond, p.Lifetime(at(3700), "u"), "the window [3000, 4000)")
}

// In real time the phase of the limiter's second is unknown: the oracle
// follows every phase, and fails only a history none explains. A query
// of a fresh user keeps every phase apart (its state key names it).
func TestFirstSecondInRealTime(t *testing.T) {
	spec := MustVariant("fixed-window:align=first-second")
	judge := func(t *testing.T, o Oracle, op TimedOp) Judgement {
		t.Helper()
		j, why, err := o.Judge(op)
		require.NoError(t, err)
		t.Logf("%+v: %v %s", op, j, why)
		return j
	}
	allow := func(user string, t int64) TimedOp {
		return TimedOp{Kind: OpAllow, User: user, Lo: at(t), Hi: at(t), Allowed: true}
	}
	o, err := NewOracle(spec, 1, time.Second)
	require.NoError(t, err)
	// A window opened at 0 ends by 1000, as early as 1 ms after it (phase
	// 1): a second request 500 ms later may be allowed, not a third 990.
	assert.NotEqual(t, Impossible, judge(t, o, allow("a", 0)))
	assert.NotEqual(t, Impossible, judge(t, o, allow("a", 500)), "a phase of 500 or less ends the first window by 500")
	assert.Equal(t, Impossible, judge(t, o, allow("a", 990)), "two windows of a second from 0 end no earlier than 1000")

	first, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 1, time.Second)
	require.NoError(t, err)
	judge(t, first, allow("a", 0))
	assert.Equal(t, Impossible, judge(t, first, allow("a", 500)), "first-hit's window is W from the request")

	assert.NotEqual(t, Impossible, judge(t, o, TimedOp{Kind: OpRemaining, User: "b", Lo: at(0), Hi: at(0), Remaining: 1}))
	assert.NotEqual(t, Impossible, judge(t, o, allow("b", 100)))
	assert.NotEqual(t, Impossible, judge(t, o, allow("b", 600)), "a phase in (103, 598] opens [φ−1000, φ) at 100")
}

// A burst of a fresh user is judged over every phase of the limiter's
// second, each followed on its own: 8 requests at once under a limit of 5
// allow 5 (or, when an edge of the second falls inside the burst, up to
// 8), never 3. Followed together, the 1000 phases were past what a
// search follows, and the burst was undecided ("any number"): identify
// named pyrate-limiter, whose burst allowed 3, a fixed window of the
// limiter's second.
func TestFirstSecondBurstInRealTime(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 123_000_000)
	for allowed, want := range map[int]Judgement{3: Impossible, 4: Impossible, 5: Undecided, 8: Undecided, 2: Impossible} {
		o, err := NewOracle(MustVariant("fixed-window:align=first-second"), 5, time.Second)
		require.NoError(t, err)
		j, span := o.JudgeBurst("u", t0, t0.Add(7*time.Millisecond), 8, allowed)
		assert.Equal(t, want, j, "8 at once, %d allowed (%s)", allowed, span)
		assert.Equal(t, "5 to 8", span)
	}
}

// An elastic window's expiry is renewed by every request (align=elastic,
// python limits' FixedWindowElasticExpiry), or by every allowed one
// (elastic-allowed): its count holds until W passes with no renewal,
// where first-hit's window ends W after the request that opened it.
func TestElasticExpiry(t *testing.T) {
	for _, c := range []struct {
		spec    string
		at      []int64
		allowed []bool
	}{
		// 2 of 2 at 0 and 500; the denials at 900, 1800 and 2799 each push
		// the end to W after them: 3799.
		{"fixed-window:align=elastic,count-denied=true", []int64{0, 500, 900, 1800, 2799, 3799}, []bool{true, true, false, false, false, true}},
		{"fixed-window:align=elastic", []int64{0, 500, 900, 1800, 2799, 3799}, []bool{true, true, false, false, false, true}},
		// Renewed by the allowed request at 500 only: it ends at 1500.
		{"fixed-window:align=elastic-allowed", []int64{0, 500, 900, 1499, 1500}, []bool{true, true, false, false, true}},
		{"fixed-window:align=first-hit", []int64{0, 500, 900, 999, 1000}, []bool{true, true, false, false, true}},
		// Requests W apart or more: each opens a window, as first-hit's.
		{"fixed-window:align=elastic", []int64{0, 1000, 2500, 2600, 2700}, []bool{true, true, true, true, false}},
	} {
		p := MustVariant(c.spec)
		m, err := p.New(2, time.Second)
		require.NoError(t, err)
		var got []bool
		for _, t := range c.at {
			ok, _ := m.Allow(at(t), "u")
			got = append(got, ok)
		}
		assert.Equal(t, c.allowed, got, c.spec)
	}
	p, err := MustVariant("fixed-window:align=elastic").New(2, time.Second)
	require.NoError(t, err)
	answers := func(ts ...int64) {
		for _, t := range ts {
			p.Allow(at(t), "u")
		}
	}
	answers(0, 500, 900)
	left, _ := p.Remaining(at(950), "u")
	assert.Equal(t, 0, left)
	assert.Equal(t, 950*time.Millisecond, p.RetryAfter(at(950), "u"), "the end: W after the denial at 900")
	assert.Equal(t, 950*time.Millisecond, p.Lifetime(at(950), "u"))
	assert.Equal(t, "the window of u, whose expiry was last renewed at +900ms, ends at +1900ms and has counted 2 of limit 2", p.Explain(at(950), at(0), "u"))
	key := p.StateKey("u")
	p.Remaining(at(1000), "u")
	assert.Equal(t, key, p.StateKey("u"), "a query renews nothing")
}

// In real time the oracle follows an elastic window: a denial renews its
// expiry (elastic) or not (elastic-allowed), so a request within W of the
// last renewal is denied however long ago the window opened; the whole
// quota is back W after the last renewal.
func TestElasticInRealTime(t *testing.T) {
	allow := func(t int64, ok bool) TimedOp {
		return TimedOp{Kind: OpAllow, User: "u", Lo: at(t), Hi: at(t + 5), Allowed: ok}
	}
	for _, c := range []struct {
		spec string
		at   int64
		want Judgement
	}{
		{"fixed-window:align=elastic", 1700, Impossible}, // renewed at 900: ends at 1900 or later
		{"fixed-window:align=elastic-allowed", 1200, Impossible},
		{"fixed-window:align=elastic-allowed", 1700, Certain}, // renewed at 500: ends by 1505
		{"fixed-window:align=first-hit", 1200, Certain},
	} {
		o, err := NewOracle(MustVariant(c.spec), 2, time.Second)
		require.NoError(t, err)
		for _, op := range []TimedOp{allow(0, true), allow(500, true), allow(900, false)} {
			j, why, err := o.Judge(op)
			require.NoError(t, err)
			require.NotEqual(t, Impossible, j, "%s: %s", c.spec, why)
		}
		j, why, err := o.Judge(allow(c.at, true))
		require.NoError(t, err)
		assert.Equal(t, c.want, j, "%s allowed at %d: %s", c.spec, c.at, why)
	}
	s, err := newSearch(MustVariant("fixed-window:align=elastic"), 2, time.Second)
	require.NoError(t, err)
	for _, op := range []TimedOp{allow(0, true), allow(500, true), allow(900, false)} {
		s.Judge(op)
	}
	d, by, ok := s.QuotaBack("u", at(900), at(905))
	require.True(t, ok)
	assert.Equal(t, time.Second, d, "W from the denial's own instant")
	assert.Equal(t, at(1905), by, "renewed as late as 905")
}

// A grid kept for good (renew=kept, sethvargo/go-limiter's memory store)
// lies where the first request anchored it however long the user was
// idle; the default one is forgotten after a whole window with no counted
// request and anchored again.
func TestFixedWindowGridKeptForGood(t *testing.T) {
	for _, c := range []struct {
		spec  string
		after bool // the request at 3300 ms
	}{
		{"fixed-window:align=first-grid,renew=kept", true},     // window [3000, 4000)
		{"fixed-window:align=first-grid", false},               // window [2500, 3500), full
		{"fixed-window:align=first-grid,renew=counted", false}, // the default, named
	} {
		p := profile(t, c.spec, 2, time.Second)
		ok, _ := p.Allow(at(0), "u")
		require.True(t, ok)
		for range 2 {
			ok, _ = p.Allow(at(2500), "u")
			require.True(t, ok, c.spec)
		}
		ok, _ = p.Allow(at(3300), "u")
		assert.Equal(t, c.after, ok, c.spec)
	}
	assert.Equal(t, "fixed-window:align=first-grid,count-denied=false,query=read", MustVariant("fixed-window:align=first-grid").String(), "renew=counted is left out")
	assert.Contains(t, profile(t, "fixed-window:align=first-grid,renew=kept", 2, time.Second).Describe(), "anchored at the user's first request and kept for good")
}
