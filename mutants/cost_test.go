package mutants_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/mutants"
)

// costStep is one call of a weighted mutant's scenario: after the clock
// moves to at, a weighted request of cost (want: its answer), or with
// query set a query of what remains (want: left).
type costStep struct {
	at    time.Duration
	query bool
	cost  int
	want  bool
	left  int
	// invalid: the request is refused with an error wrapping
	// contract.ErrInvalidCost.
	invalid bool
}

// allOrNothing is what an honest log of 6 answers: a request that fits in
// part is refused whole, and a refused one logs nothing.
var allOrNothing = []costStep{
	{cost: 4, want: true}, {cost: 3}, {query: true, left: 2}, {cost: 2, want: true}, {cost: 1}, {query: true},
}

// TestCostFaults drives each weighted mutant through a scenario its fault
// changes, on a fake clock, against Redis: the fault is there, and (for
// the mutants whose fault lies elsewhere) the rest decides all or nothing.
// The limit is 6 and the window 1s.
func TestCostFaults(t *testing.T) {
	const w = time.Second
	cases := map[string][]costStep{
		// 4 fit; of 3, the 2 that fit are logged and it is allowed.
		"cost-partial": {{cost: 4, want: true}, {cost: 3, want: true}, {query: true}, {cost: 1}, {cost: 7, at: w, want: true}, {query: true, at: w}},
		// 4 is one entry; 3 more fit.
		"cost-one-member": {{cost: 4, want: true}, {query: true, left: 5}, {cost: 3, want: true}, {query: true, left: 4}},
		// with 4 active, one more fits: 3 are logged.
		"cost-check-one": {{cost: 4, want: true}, {cost: 3, want: true}, {query: true}},
		// the refused 3 is logged: nothing is left.
		"cost-refused-consumes": {{cost: 4, want: true}, {cost: 3}, {query: true}, {cost: 2}},
		// each cost 0 logs one.
		"cost-zero-consumes": {{cost: 0, want: true}, {query: true, left: 5}, {cost: 5, want: true}, {cost: 0}, {query: true}},
		// -2 refunds the two oldest entries.
		"cost-negative-refunds": {{cost: 6, want: true}, {cost: -2, want: true}, {query: true, left: 2}, {cost: 2, want: true}, {cost: 1}},
		// of 3 with 2 free, and of 1 with none, invalid input; nothing logged.
		"cost-invalid-over-free": {{cost: 4, want: true}, {cost: 3, invalid: true}, {query: true, left: 2}, {cost: 2, want: true}, {cost: 1, invalid: true}, {query: true}},
		// entries at s, s-1, s-2: two leave before s+W.
		"cost-spread-scores": {{cost: 3, want: true}, {query: true, left: 3}, {at: w - 2*time.Millisecond, query: true, left: 4}, {at: w - time.Millisecond, query: true, left: 5}, {at: w, query: true, left: 6}},
	}
	for _, name := range []string{"cost-zero-consumes", "cost-negative-refunds", "cost-spread-scores", "cost-non-atomic"} {
		cases[name+"/all-or-nothing"] = allOrNothing
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			start := time.UnixMilli(1_767_225_600_000)
			clock := fakeclock.New(start)
			m := byName(t, mutantOf(name))
			lim, err := m.New(mutants.Store{Redis: store.Client, Clock: clock, Prefix: fmt.Sprintf("rlc-cost-test:%d:", time.Now().UnixNano()), MaxRequests: 6, Window: w})
			require.NoError(t, err)
			costly, ok := lim.(contract.CostLimiter)
			require.True(t, ok, "a weighted mutant is a contract.CostLimiter")
			for i, s := range steps {
				clock.Set(start.Add(s.at))
				if s.query {
					left, err := lim.GetRemainingRequests(ctx, "u")
					require.NoError(t, err)
					assert.Equal(t, s.left, left, "step %d: remaining at +%v", i, s.at)
					continue
				}
				got, err := costly.AllowRequestN(ctx, "u", s.cost)
				if s.invalid {
					require.ErrorIs(t, err, contract.ErrInvalidCost, "step %d: AllowRequestN(u, %d)", i, s.cost)
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, s.want, got, "step %d: AllowRequestN(u, %d) at +%v", i, s.cost, s.at)
			}
		})
	}
}

// mutantOf is the mutant a case of TestCostFaults drives.
func mutantOf(name string) string {
	for i := range name {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return name
}

// TestNegativeCostIsInvalid: a weighted mutant whose fault is not
// cost-negative-refunds refuses a negative cost with ErrInvalidCost, and
// it changes nothing.
func TestNegativeCostIsInvalid(t *testing.T) {
	ctx := context.Background()
	m := byName(t, "cost-partial")
	lim, err := m.New(mutants.Store{Redis: store.Client, Clock: fakeclock.New(time.UnixMilli(1_767_225_600_000)), Prefix: fmt.Sprintf("rlc-cost-test:%d:", time.Now().UnixNano()), MaxRequests: 3, Window: time.Minute})
	require.NoError(t, err)
	for range 3 {
		ok, err := lim.AllowRequest(ctx, "u")
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := lim.(contract.CostLimiter).AllowRequestN(ctx, "u", -2)
	assert.False(t, ok)
	assert.ErrorIs(t, err, contract.ErrInvalidCost)
	left, err := lim.GetRemainingRequests(ctx, "u")
	require.NoError(t, err)
	assert.Zero(t, left, "nothing was refunded")
}

// TestWeightedMeansCostLimiter: a mutant is marked Weighted exactly when
// it takes weighted requests, so the self-test grades what it has.
func TestWeightedMeansCostLimiter(t *testing.T) {
	for _, m := range mutants.All() {
		if !m.NeedsRedis {
			continue
		}
		lim, err := m.New(mutants.Store{Redis: store.Client, Clock: fakeclock.New(time.UnixMilli(1_767_225_600_000)), Prefix: "rlc-cost-test:", MaxRequests: 3, Window: time.Minute})
		require.NoError(t, err, m.Name)
		_, costly := lim.(contract.CostLimiter)
		if m.Weighted {
			assert.True(t, costly, "%s is Weighted, and takes no cost", m.Name)
		}
	}
}
