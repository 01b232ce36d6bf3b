package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestASearchPastItsBudgetIsUndecided: the steps an operation takes are
// its states times the instants of its interval from each state's low;
// past searchBudget the search leaves the user undecided (never failed),
// where it used to take each step: under load, a token bucket's states
// and intervals of hundreds of ms took identify minutes.
func TestASearchPastItsBudgetIsUndecided(t *testing.T) {
	states := make([]cand, 1000)
	s := &searchOracle{}
	assert.False(t, s.overBudget(states, 0, searchBudget/1000-1), "exactly the budget")
	assert.True(t, s.overBudget(states, 0, searchBudget/1000))
	for i := range states {
		states[i].low = searchBudget / 1000 // instants before a state's low are not searched
	}
	assert.False(t, s.overBudget(states, 0, 2*searchBudget/1000-1))

	// A judgement past it leaves the user undecided from then on.
	o, err := newSearch(MustVariant("token-bucket"), 5, time.Second)
	require.NoError(t, err)
	su := o.user("u")
	for len(su.states) < 1000 {
		su.states = append(su.states, o.fresh(0)...)
	}
	at := time.UnixMilli(1_700_000_000_000)
	j, _, err := o.Judge(TimedOp{Kind: OpAllow, User: "u", Lo: at, Hi: at.Add(time.Second), Allowed: true})
	require.NoError(t, err)
	assert.Equal(t, Undecided, j)
	assert.True(t, su.off)
}

// Searches bound by one Budget spend it together: once it is spent, each
// gives its users up (undecided, never failed), and the budget says so.
func TestSearchesShareABudget(t *testing.T) {
	b := NewBudget(10_000)
	at := time.UnixMilli(1_700_000_000_000)
	judge := func(o Oracle, user string) Judgement {
		j, _, err := o.Judge(TimedOp{Kind: OpAllow, User: user, Lo: at, Hi: at.Add(time.Second), Allowed: true})
		require.NoError(t, err)
		return j
	}
	first, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 5, time.Second)
	require.NoError(t, err)
	Bound(first, b)
	assert.NotEqual(t, Impossible, judge(first, "a"))
	assert.False(t, b.Exhausted(), "a state per reading of a change over 1004 instants: %d steps", b.Spent())
	second, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 5, time.Second)
	require.NoError(t, err)
	Bound(second, b)
	judge(second, "a")
	assert.False(t, b.Exhausted())
	assert.Equal(t, Undecided, judge(second, "b"), "the third search needs more than is left")
	assert.True(t, b.Exhausted())
	var none *Budget
	assert.False(t, none.Exhausted(), "a nil budget bounds nothing")

	done := make(chan struct{})
	late := NewBudget(1 << 40).Until(done)
	third, err := NewOracle(MustVariant("fixed-window:align=first-hit"), 5, time.Second)
	require.NoError(t, err)
	Bound(third, late)
	judge(third, "a")
	assert.False(t, late.Exhausted())
	close(done)
	assert.Equal(t, Undecided, judge(third, "b"), "its time is up, whatever steps are left")
	assert.True(t, late.Exhausted())
}
