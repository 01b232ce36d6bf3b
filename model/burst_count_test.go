package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fresh user's burst of 40 over 97ms under a first-hit fixed window of
// 20 per second lies within one window whatever its first request's
// instant: exactly 20 are allowed. The search over every instant once
// gave it up (thousands of anchors × counts) and left it undecided,
// blaming the round trips; it is decided by its count, from its first
// request pinned at the interval's start, and the user is then followed
// no further.
func TestFreshBurstDecidedByCount(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 123_000_000)
	for allowed, want := range map[int]Judgement{20: Certain, 19: Impossible, 21: Impossible, 40: Impossible} {
		o, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 20, time.Second)
		require.NoError(t, err)
		j, span := o.JudgeBurst("u", t0, t0.Add(97*time.Millisecond), 40, allowed)
		assert.Equal(t, want, j, "40 within 97ms, %d allowed (%s)", allowed, span)
		assert.Equal(t, "exactly 20", span)
		j, _, err = o.Judge(TimedOp{Kind: OpAllow, User: "u", Lo: t0.Add(time.Second), Hi: t0.Add(time.Second), Allowed: true})
		require.NoError(t, err)
		if want == Certain {
			assert.Equal(t, Undecided, j, "the user is followed no further")
			assert.Equal(t, CauseSearch, UndecidedCause(o))
		}
	}
}

// A burst that an edge of a grid fixed to the clock may split is not
// decided by its count: the epoch's windows of 1s may end within it.
func TestGridBurstNotDecidedByCount(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 950_000_000)
	o, err := NewOracle(MustVariant("fixed-window:align=epoch"), 20, time.Second)
	require.NoError(t, err)
	j, _ := o.JudgeBurst("u", t0, t0.Add(97*time.Millisecond), 40, 30)
	assert.NotEqual(t, Impossible, j, "20 before the edge at +50ms and 10 after it")
}

// Under GCRA a fresh user's burst refills as it goes: the count pinned
// at the first request still spans what the instants allow (1 to 3 of
// 40 within 97ms under one request every 40ms), never one number.
func TestPacerBurstByCountSpansRefills(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	o, err := NewOracle(MustVariant("gcra:burst=1"), 25, time.Second)
	require.NoError(t, err)
	s := o.(*searchOracle)
	su := s.user("u")
	j, span := s.burstByCount(su, "u", t0.UnixMilli(), t0.UnixMilli()+97, 40, 3)
	assert.Equal(t, Undecided, j, span)
	assert.Equal(t, "1 to 3", span)
	j, _ = s.burstByCount(s.user("v"), "v", t0.UnixMilli(), t0.UnixMilli()+97, 40, 4)
	assert.Equal(t, Impossible, j)
}

// The search's undecided answers say why: the round trips, or its bounds.
func TestUndecidedCause(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	o, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 1, time.Second)
	require.NoError(t, err)
	j, _, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Lo: t0, Hi: t0, Allowed: true})
	require.NoError(t, err)
	require.Equal(t, Certain, j)
	j, _, err = o.Judge(TimedOp{Kind: OpAllow, User: "u", Lo: t0.Add(990 * time.Millisecond), Hi: t0.Add(1010 * time.Millisecond), Allowed: true})
	require.NoError(t, err)
	assert.Equal(t, Undecided, j)
	assert.Equal(t, CauseTiming, UndecidedCause(o))
}

// A burst too wide for the search to follow at every phase of the
// limiter's second is still judged by what a fresh user is owed: its
// first N requests are allowed, whatever the instants. Under load a
// burst of 8 over 14ms with 1 allowed (a log whose lock refused the
// rest) was undecided for a window at the limiter's second, and identify
// named that window (issue 61).
func TestFirstSecondWideBurstOwesAFreshUserN(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 123_000_000)
	for allowed, want := range map[int]Judgement{1: Impossible, 4: Impossible, 5: Undecided, 8: Undecided} {
		o, err := NewOracle(MustVariant("fixed-window:align=first-second"), 5, time.Second)
		require.NoError(t, err)
		j, span := o.JudgeBurst("u", t0, t0.Add(400*time.Millisecond), 8, allowed)
		assert.Equal(t, want, j, "8 over 400ms, %d allowed (%s)", allowed, span)
	}
}
