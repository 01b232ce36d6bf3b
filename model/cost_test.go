package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weightedSpecs are the variants the weighted-request tests cover: every
// one of everySpec, and the query, expire and reading variants that
// change what a decision saves.
var weightedSpecs = append([]string{
	"fixed-window:align=first-hit,query=write", "fixed-window:align=first-grid,query=write,reconfigure=finish",
	"sliding-counter:reconfigure=finish", "sliding-counter:align=first-grid,reconfigure=rebase,count-denied=true",
	"gcra:reconfigure=drain", "gcra:burst=3,reconfigure=settle",
	"token-bucket:refill=interval,expire=idle,query=write", "token-bucket:capacity=3,reconfigure=proportional",
	"token-bucket:refill=interval,reconfigure=settle", "token-bucket:query=write,expire=idle",
	"fixed-window:align=elastic-allowed,count-denied=true,reconfigure=finish", "fixed-window:align=elastic,reconfigure=finish",
}, everySpec...)

// capacity is the largest cost a fresh user of spec under limit n can be
// allowed: the burst B of a GCRA, the capacity C of a bucket, else N.
func capacity(t *testing.T, spec string, n int) int {
	t.Helper()
	v := MustVariant(spec)
	key := map[string]string{ProfileGCRA: "burst", ProfileTokenBucket: "capacity"}[v.Name]
	if c := fixedParam(v.Params[key]); c > 0 {
		return c
	}
	return n
}

// countDenied says whether spec counts refused requests.
func countDenied(spec string) bool { return MustVariant(spec).Params["count-denied"] == "true" }

// weighted is p's AllowN.
func weighted(t *testing.T, p Profile) Weighted {
	t.Helper()
	w, ok := p.(Weighted)
	require.True(t, ok, "%s is not Weighted", p.Describe())
	return w
}

// touched is p after a read of user at now: the sliding log prunes the
// entries that have left, as every one of its decisions does.
func touched(p Replayable, now time.Time, user string) Replayable {
	q := p.Clone().(Replayable)
	if s, ok := q.(*slidingLog); ok {
		s.Active(now, user)
	}
	return q
}

// counted is what a count-denied variant counts in t's window for user:
// the fixed window's count, the weighted counter's cur.
func counted(p Profile, t int64, user string) int64 {
	switch m := p.(type) {
	case *fixedWindow:
		return int64(m.current(t, user).count)
	case *slidingCounter:
		return m.at(t, user).cur
	}
	panic(fmt.Sprintf("%T counts no denied request", p))
}

// TestAllowNOfOneIsAllow: AllowN(now, u, 1) answers as Allow and leaves
// the same state, on random schedules with queries, resets, changes of
// configuration and the clock stepping back; two models side by side.
func TestAllowNOfOneIsAllow(t *testing.T) {
	for _, spec := range weightedSpecs {
		for _, seed := range testtier.Seeds(t, 8, 5) {
			rng := rand.New(rand.NewPCG(seed, 41))
			n, w := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
			unit := profile(t, spec, n, w)
			byCost := unit.Clone().(Replayable)
			now := time.UnixMilli(epochMs + rng.Int64N(1000))
			for step := range 200 {
				u := fmt.Sprint("u", rng.IntN(2))
				where := fmt.Sprintf("%s seed %d step %d", spec, seed, step)
				switch r := rng.IntN(100); {
				case r < 55:
					a, err := unit.Allow(now, u)
					require.NoError(t, err)
					b, err := weighted(t, byCost).AllowN(now, u, 1)
					require.NoError(t, err)
					require.Equal(t, a, b, "%s: Allow and AllowN(1)", where)
				case r < 70:
					a, _ := unit.Remaining(now, u)
					b, _ := byCost.Remaining(now, u)
					require.Equal(t, a, b, where)
				case r < 74:
					require.NoError(t, unit.Reset(u))
					require.NoError(t, byCost.Reset(u))
				case r < 78:
					nn, ww := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
					require.NoError(t, unit.Configure(now, nn, ww))
					require.NoError(t, byCost.Configure(now, nn, ww))
				case r < 81:
					now = now.Add(-time.Duration(rng.IntN(50)) * time.Millisecond)
				default:
					now = now.Add(time.Duration(rng.IntN(120)) * time.Millisecond)
				}
				require.Equal(t, unit.StateKey(u), byCost.StateKey(u), where)
			}
		}
	}
}

// TestWeightedRequests drives each variant with requests of random costs
// (0 to a little over its capacity) and checks, at each one, against a
// shadow model fed unit requests only:
//
//   - allowed(n) is "n requests in a row at t would all be allowed" (n <=
//     Remaining), and an allowed one leaves the state n Allow at t leave:
//     the same StateKey, and every later answer alike;
//   - a refused one changes nothing (the same StateKey), but under
//     count-denied, where it adds n to the count of t's window, and
//     under align=elastic, where it renews the window's expiry;
//   - a cost above the capacity (N, B or C) is never allowed;
//   - a cost of 0 is allowed and changes nothing.
func TestWeightedRequests(t *testing.T) {
	for _, spec := range weightedSpecs {
		t.Run(spec, func(t *testing.T) {
			for _, seed := range testtier.Seeds(t, 10, 8) {
				rng := rand.New(rand.NewPCG(seed, 43))
				n, w := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
				p := profile(t, spec, n, w)
				shadow := p.Clone().(Replayable)
				now := time.UnixMilli(epochMs + rng.Int64N(1000))
				for step := range 200 {
					where := fmt.Sprintf("seed %d step %d", seed, step)
					u := fmt.Sprint("u", rng.IntN(2))
					switch r := rng.IntN(100); {
					case r < 55:
						weightedStep(t, spec, p, &shadow, now, u, rng.IntN(capacity(t, spec, p.Limit())+3), where)
					case r < 65:
						a, _ := p.Allow(now, u)
						b, _ := shadow.Allow(now, u)
						require.Equal(t, b, a, "%s: a unit request after weighted ones", where)
					case r < 75:
						a, _ := p.Remaining(now, u)
						b, _ := shadow.Remaining(now, u)
						require.Equal(t, b, a, "%s: remaining", where)
						require.Equal(t, shadow.RetryAfter(now, u), p.RetryAfter(now, u), "%s: retry-after", where)
					case r < 78:
						require.NoError(t, p.Reset(u))
						require.NoError(t, shadow.Reset(u))
					case r < 81:
						nn, ww := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
						require.NoError(t, p.Configure(now, nn, ww))
						require.NoError(t, shadow.Configure(now, nn, ww))
					case r < 84:
						now = now.Add(-time.Duration(rng.IntN(50)) * time.Millisecond)
					default:
						now = now.Add(time.Duration(rng.IntN(120)) * time.Millisecond)
					}
					require.Equal(t, shadow.StateKey(u), p.StateKey(u), "%s: the state", where)
				}
			}
		})
	}
}

// weightedStep is one request of cost c on p, checked against the shadow
// model (which it brings to p's state).
func weightedStep(t *testing.T, spec string, p Replayable, shadow *Replayable, now time.Time, u string, c int, where string) {
	t.Helper()
	before := p.Clone().(Replayable)
	room, _ := before.Clone().Remaining(now, u)
	ok, err := weighted(t, p).AllowN(now, u, c)
	require.NoError(t, err)
	where = fmt.Sprintf("%s: AllowN(%d) with %d remaining", where, c, room)
	switch {
	case c == 0 && strings.Contains(spec, "query=write"):
		require.True(t, ok, "%s: a cost of 0 is allowed", where)
		before.Remaining(now, u) // the query, which writes
		require.Equal(t, before.StateKey(u), p.StateKey(u), "%s: a cost of 0 is the query, which writes", where)
		(*shadow).Remaining(now, u)
		return
	case c == 0:
		require.True(t, ok, "%s: a cost of 0 is allowed", where)
		require.Equal(t, before.StateKey(u), p.StateKey(u), "%s: a cost of 0 changes nothing", where)
		return
	case c > capacity(t, spec, p.Limit()):
		require.False(t, ok, "%s: a cost above the capacity %d never fits", where, capacity(t, spec, p.Limit()))
	}
	require.Equal(t, c <= room, ok, "%s: allowed exactly when n requests in a row would be", where)
	switch {
	case ok:
		for k := range c {
			one, _ := (*shadow).Allow(now, u)
			require.True(t, one, "%s: unit request %d of %d", where, k+1, c)
		}
		require.Equal(t, (*shadow).StateKey(u), p.StateKey(u), "%s: the state of %d requests at once", where, c)
		syncSweeps(p, *shadow)
	case countDenied(spec):
		tm := now.UnixMilli()
		require.Equal(t, counted(before, tm, u)+int64(c), counted(p, tm, u), "%s: a refused request counts its cost", where)
		*shadow = p.Clone().(Replayable) // n unit requests would not all have been refused
	case MustVariant(spec).Params["align"] == "elastic":
		tm := now.UnixMilli()
		require.Equal(t, counted(before, tm, u), counted(p, tm, u), "%s: a refused request counts nothing", where)
		if counted(p, tm, u) > 0 {
			require.Equal(t, p.Window(), p.Lifetime(now, u), "%s: a refused request renews the window's expiry", where)
		}
		*shadow = p.Clone().(Replayable) // a refused unit request renews it too, but may not be refused
	default:
		require.Equal(t, touched(before, now, u).StateKey(u), p.StateKey(u), "%s: a refused request changes nothing", where)
		*shadow = touched(*shadow, now, u) // the sliding log pruned the user's old entries
		syncSweeps(p, *shadow)
	}
}

// syncSweeps gives shadow, a sliding log, p's count of decisions: one
// request of cost n is one decision, n unit requests n, and the sweep of
// idle users (every forgetEvery decisions) prunes at the same steps.
func syncSweeps(p, shadow Replayable) {
	if s, ok := shadow.(*slidingLog); ok {
		s.decisions = p.(*slidingLog).decisions
	}
}

// TestCostAboveTheCapacityOnAFreshUser: a fresh user gets a cost of its
// whole capacity (N, B or C) at once, and never one more.
func TestCostAboveTheCapacityOnAFreshUser(t *testing.T) {
	for _, spec := range weightedSpecs {
		for _, n := range []int{1, 4} {
			c := capacity(t, spec, n)
			p := profile(t, spec, n, time.Second)
			now := time.UnixMilli(epochMs)
			ok, err := weighted(t, p).AllowN(now, "over", c+1)
			require.NoError(t, err)
			assert.False(t, ok, "%s, N=%d: cost %d", spec, n, c+1)
			ok, _ = weighted(t, p).AllowN(now, "fresh", c)
			assert.True(t, ok, "%s, N=%d: cost %d, the whole capacity", spec, n, c)
			ok, _ = p.Allow(now, "fresh")
			assert.False(t, ok, "%s, N=%d: the whole capacity was spent", spec, n)
		}
	}
}

// TestNegativeCost: a negative cost is ErrInvalidCost everywhere, and
// changes nothing.
func TestNegativeCost(t *testing.T) {
	for _, spec := range weightedSpecs {
		p := profile(t, spec, 3, time.Second)
		p.Allow(time.UnixMilli(epochMs), "u")
		key := p.StateKey("u")
		_, err := weighted(t, p).AllowN(time.UnixMilli(epochMs), "u", -1)
		require.ErrorIs(t, err, contract.ErrInvalidCost, spec)
		require.Equal(t, key, p.StateKey("u"), spec)
		_, err = weighted(t, p).AllowN(time.UnixMilli(epochMs), "", 1)
		require.ErrorIs(t, err, contract.ErrInvalidUserID, spec)

		o, err := NewOracle(MustVariant(spec), 3, time.Second)
		require.NoError(t, err)
		_, _, err = o.Judge(TimedOp{Kind: OpAllow, User: "u", Cost: -2, Lo: time.UnixMilli(epochMs), Hi: time.UnixMilli(epochMs)})
		require.ErrorIs(t, err, contract.ErrInvalidCost, spec)
	}
}

// unweighted hides a profile's AllowN.
type unweighted struct{ Profile }

// TestLimiterAllowRequestN: the model limiter takes costs when its profile
// is Weighted, and says it cannot otherwise.
func TestLimiterAllowRequestN(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.UnixMilli(epochMs))
	l, err := NewLimiter(clk, 3, time.Second)
	require.NoError(t, err)
	for _, c := range []struct {
		n    int
		want bool
	}{{2, true}, {2, false}, {0, true}, {1, true}, {1, false}} {
		ok, err := l.AllowRequestN(ctx, "u", c.n)
		require.NoError(t, err)
		assert.Equal(t, c.want, ok, "cost %d", c.n)
	}
	_, err = l.AllowRequestN(ctx, "u", -1)
	assert.ErrorIs(t, err, contract.ErrInvalidCost)
	clk.Advance(time.Second)
	ok, _ := l.AllowRequestN(ctx, "u", 4)
	assert.False(t, ok, "above the limit")

	plain := NewProfileLimiter(clk, unweighted{profile(t, "gcra", 3, time.Second)})
	ok, err = plain.AllowRequestN(ctx, "u", 1)
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = plain.AllowRequestN(ctx, "u", 2)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	_, err = plain.AllowRequestN(ctx, "u", -1)
	assert.ErrorIs(t, err, contract.ErrInvalidCost)
}

// TestEveryBuiltinStatesItsCost: every built-in algorithm states its rule
// of costs, and Register refuses a rule from an algorithm whose model
// takes none.
func TestEveryBuiltinStatesItsCost(t *testing.T) {
	for _, alg := range Builtin().All() {
		assert.Contains(t, alg.Cost, "n <", alg.Name)
	}
	alg := *Builtin().Lookup(ProfileGCRA)
	alg.Name = "plain-gcra"
	alg.Params = slices.DeleteFunc(slices.Clone(alg.Params), func(p ParamInfo) bool { return p.Name == ReconfigureParam })
	inner := alg.New
	alg.New = func(p map[string]string, n int, w time.Duration) Replayable {
		return unweightedReplayable{inner(p, n, w)}
	}
	err := (&Algorithms{}).Register(alg)
	assert.ErrorContains(t, err, "not Weighted")
	alg.Cost = ""
	assert.NoError(t, (&Algorithms{}).Register(alg))
}

// unweightedReplayable hides a model's AllowN.
type unweightedReplayable struct{ inner Replayable }

func (u unweightedReplayable) Describe() string      { return u.inner.Describe() }
func (u unweightedReplayable) Limit() int            { return u.inner.Limit() }
func (u unweightedReplayable) Window() time.Duration { return u.inner.Window() }
func (u unweightedReplayable) Allow(now time.Time, user string) (bool, error) {
	return u.inner.Allow(now, user)
}
func (u unweightedReplayable) Remaining(now time.Time, user string) (int, error) {
	return u.inner.Remaining(now, user)
}
func (u unweightedReplayable) RetryAfter(now time.Time, user string) time.Duration {
	return u.inner.RetryAfter(now, user)
}
func (u unweightedReplayable) Reset(user string) error { return u.inner.Reset(user) }
func (u unweightedReplayable) Configure(now time.Time, n int, w time.Duration) error {
	return u.inner.Configure(now, n, w)
}
func (u unweightedReplayable) Lifetime(now time.Time, user string) time.Duration {
	return u.inner.Lifetime(now, user)
}
func (u unweightedReplayable) Explain(now, base time.Time, user string) string {
	return u.inner.Explain(now, base, user)
}
func (u unweightedReplayable) Clone() Profile {
	return unweightedReplayable{u.inner.Clone().(Replayable)}
}
func (u unweightedReplayable) StateKey(user string) string { return u.inner.StateKey(user) }
