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
