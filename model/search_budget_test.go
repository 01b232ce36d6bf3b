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
	assert.False(t, overBudget(states, 0, searchBudget/1000-1), "exactly the budget")
	assert.True(t, overBudget(states, 0, searchBudget/1000))
	for i := range states {
		states[i].low = searchBudget / 1000 // instants before a state's low are not searched
	}
	assert.False(t, overBudget(states, 0, 2*searchBudget/1000-1))

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
