package model

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/internal/testtier"
)

// debtSpecs are the variants of cost=debt the tests cover: GCRA and every
// kind of token bucket, with readings of a change that move a debt.
var debtSpecs = []string{
	"gcra:cost=debt", "gcra:burst=1,cost=debt", "gcra:burst=3,cost=debt,reconfigure=settle", "gcra:cost=debt,reconfigure=drain",
	"token-bucket:cost=debt", "token-bucket:capacity=2,cost=debt,reconfigure=proportional",
	"token-bucket:refill=interval,cost=debt", "token-bucket:refill=interval,capacity=3,cost=debt,reconfigure=settle",
	"token-bucket:refill=interval,expire=idle,query=write,cost=debt",
}

// atMs is an instant ms after epochMs.
func atMs(ms int64) time.Time { return time.UnixMilli(epochMs + ms) }

// TestGCRADebt: with 5 per minute and a burst of 1 (T = 12 s), a fresh
// user's request of cost 4 is allowed at once under cost=debt and the next
// request waits 4T = 48 s; a cost of 7, above the limit, is allowed too
// when nothing is owed (Guava's tryAcquire(n), cards/notes/guava.md).
// Under cost=whole neither fits.
func TestGCRADebt(t *testing.T) {
	debt := weighted(t, profile(t, "gcra:burst=1,cost=debt", 5, time.Minute))
	ok, err := debt.AllowN(atMs(0), "u", 4)
	require.NoError(t, err)
	assert.True(t, ok, "cost 4 with nothing owed")
	p := debt.(Replayable)
	assert.Equal(t, []bool{false, false}, answers(p, "u", 0, 47_999), "the debt of 4T blocks the next request for 48 s")
	left, _ := p.Remaining(atMs(0), "u")
	assert.Equal(t, 0, left)
	assert.Equal(t, 48*time.Second, p.RetryAfter(atMs(0), "u"))
	assert.Equal(t, 48*time.Second, p.Lifetime(atMs(0), "u"))
	ok, _ = debt.AllowN(atMs(47_999), "u", 1)
	assert.False(t, ok, "in debt: no cost is allowed")
	ok, _ = debt.AllowN(atMs(48_000), "u", 7)
	assert.True(t, ok, "cost 7, above the limit, once the debt is repaid")
	assert.Equal(t, []bool{false, true}, answers(p, "u", 48_000+7*12_000-1, 48_000+7*12_000))

	whole := weighted(t, profile(t, "gcra:burst=1", 5, time.Minute))
	for _, n := range []int{2, 4, 7} {
		ok, _ = whole.AllowN(atMs(0), "u", n)
		assert.False(t, ok, "cost=whole: cost %d never fits a burst of 1", n)
	}
}

// TestTokenBucketDebt: a bucket of 3 refilled at 1 a second grants a
// fresh user's request of cost 5 under cost=debt, leaving -2 tokens: the
// next request waits 3 s (the debt and one token), and the bucket is
// full 5 s after; an interval bucket waits for the refills that bring a
// token, and with expire=idle lives until refills make it full.
func TestTokenBucketDebt(t *testing.T) {
	p := profile(t, "token-bucket:cost=debt", 3, 3*time.Second)
	ok, _ := weighted(t, p).AllowN(atMs(0), "u", 5)
	require.True(t, ok)
	left, _ := p.Remaining(atMs(0), "u")
	assert.Equal(t, 0, left, "in debt")
	assert.Equal(t, 3*time.Second, p.RetryAfter(atMs(0), "u"))
	assert.Equal(t, 5*time.Second, p.Lifetime(atMs(0), "u"))
	assert.Equal(t, []bool{false, true, false}, answers(p, "u", 2_999, 3_000, 3_000))

	iv := profile(t, "token-bucket:refill=interval,capacity=2,cost=debt", 2, time.Second)
	ok, _ = weighted(t, iv).AllowN(atMs(0), "u", 5) // -3: two refills of 2 bring one token
	require.True(t, ok)
	assert.Equal(t, 2*time.Second, iv.RetryAfter(atMs(0), "u"))
	assert.Equal(t, 3*time.Second, iv.Lifetime(atMs(0), "u"), "full after ceil((2+3)/2) refills")
	assert.Equal(t, []bool{false, false, true}, answers(iv, "u", 999, 1_999, 2_000))

	idle := profile(t, "token-bucket:refill=interval,capacity=2,expire=idle,cost=debt", 2, time.Second)
	ok, _ = weighted(t, idle).AllowN(atMs(0), "u", 5)
	require.True(t, ok)
	assert.Equal(t, 3*time.Second, idle.Lifetime(atMs(0), "u"), "kept W*ceil((C+debt)/N), not W*ceil(C/N)")
	assert.Equal(t, []bool{false}, answers(idle, "u", 1_500), "kept in debt past W*ceil(C/N)")

	whole := weighted(t, profile(t, "token-bucket", 3, 3*time.Second))
	ok, _ = whole.AllowN(atMs(0), "u", 4)
	assert.False(t, ok, "cost=whole: 4 never fits a bucket of 3")
}

// TestDebtAllowsWhatAUnitRequestWould: under cost=debt a request of any
// cost is allowed exactly when a unit request would be, on random
// schedules of random costs (up to three times the capacity), queries,
// resets, changes of configuration and clock steps.
func TestDebtAllowsWhatAUnitRequestWould(t *testing.T) {
	for _, spec := range debtSpecs {
		for _, seed := range testtier.Seeds(t, 8, 3) {
			rng := rand.New(rand.NewPCG(seed, 53))
			n, w := 1+rng.IntN(5), time.Duration(20+rng.IntN(300))*time.Millisecond
			p := profile(t, spec, n, w)
			now := atMs(rng.Int64N(1000))
			for step := range 200 {
				u := fmt.Sprint("u", rng.IntN(2))
				where := fmt.Sprintf("%s seed %d step %d", spec, seed, step)
				switch r := rng.IntN(100); {
				case r < 60:
					c := 1 + rng.IntN(3*capacity(t, strings.ReplaceAll(spec, ",cost=debt", ""), p.Limit()))
					unit, _ := p.Clone().(Replayable).Allow(now, u)
					ok, err := weighted(t, p).AllowN(now, u, c)
					require.NoError(t, err)
					require.Equal(t, unit, ok, "%s: cost %d is allowed exactly when one would be", where, c)
				case r < 70:
					p.Remaining(now, u)
				case r < 74:
					require.NoError(t, p.Reset(u))
				case r < 78:
					require.NoError(t, p.Configure(now, 1+rng.IntN(5), time.Duration(20+rng.IntN(300))*time.Millisecond))
				case r < 81:
					now = now.Add(-time.Duration(rng.IntN(50)) * time.Millisecond)
				default:
					now = now.Add(time.Duration(rng.IntN(120)) * time.Millisecond)
				}
			}
		}
	}
}

// TestUnitRequestsAlikeUnderEitherCost: a unit request (Allow, or AllowN
// of 1) is decided alike under cost=whole and cost=debt, and leaves the
// same state, on random schedules with queries, resets, changes of
// configuration and the clock stepping back; what remains, retry-after
// and the lifetime are alike too.
func TestUnitRequestsAlikeUnderEitherCost(t *testing.T) {
	for _, spec := range debtSpecs {
		wholeSpec := strings.Replace(spec, "cost=debt", "cost=whole", 1)
		for _, seed := range testtier.Seeds(t, 8, 3) {
			rng := rand.New(rand.NewPCG(seed, 59))
			n, w := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
			whole, debt := profile(t, wholeSpec, n, w), profile(t, spec, n, w)
			now := atMs(rng.Int64N(1000))
			for step := range 200 {
				u := fmt.Sprint("u", rng.IntN(2))
				where := fmt.Sprintf("%s seed %d step %d", spec, seed, step)
				switch r := rng.IntN(100); {
				case r < 30:
					a, _ := whole.Allow(now, u)
					b, _ := debt.Allow(now, u)
					require.Equal(t, a, b, "%s: Allow", where)
				case r < 55:
					a, _ := weighted(t, whole).AllowN(now, u, 1)
					b, _ := weighted(t, debt).AllowN(now, u, 1)
					require.Equal(t, a, b, "%s: AllowN(1)", where)
				case r < 70:
					a, _ := whole.Remaining(now, u)
					b, _ := debt.Remaining(now, u)
					require.Equal(t, a, b, "%s: remaining", where)
				case r < 74:
					require.NoError(t, whole.Reset(u))
					require.NoError(t, debt.Reset(u))
				case r < 78:
					nn, ww := 1+rng.IntN(6), time.Duration(20+rng.IntN(300))*time.Millisecond
					require.NoError(t, whole.Configure(now, nn, ww))
					require.NoError(t, debt.Configure(now, nn, ww))
				case r < 81:
					now = now.Add(-time.Duration(rng.IntN(50)) * time.Millisecond)
				default:
					now = now.Add(time.Duration(rng.IntN(120)) * time.Millisecond)
				}
				require.Equal(t, whole.StateKey(u), debt.StateKey(u), "%s: the state", where)
				require.Equal(t, whole.RetryAfter(now, u), debt.RetryAfter(now, u), "%s: retry-after", where)
				require.Equal(t, whole.Lifetime(now, u), debt.Lifetime(now, u), "%s: lifetime", where)
			}
		}
	}
}

// TestDebtGCRAIsADebtBucket: GCRA and a continuous bucket of the same
// burst decide alike under cost=debt too, requests of every cost and
// queries alike (identify groups them).
func TestDebtGCRAIsADebtBucket(t *testing.T) {
	for _, pair := range [][2]string{{"gcra:cost=debt", "token-bucket:cost=debt"}, {"gcra:burst=1,cost=debt", "token-bucket:capacity=1,cost=debt,expire=idle,query=write"}} {
		for _, seed := range testtier.Seeds(t, 20, 5) {
			rng := rand.New(rand.NewPCG(seed, 61))
			n, w := 1+rng.IntN(6), time.Duration(20+rng.IntN(500))*time.Millisecond
			p, q := profile(t, pair[0], n, w), profile(t, pair[1], n, w)
			now := atMs(rng.Int64N(1000))
			for step := range 300 {
				u := fmt.Sprint("u", rng.IntN(2))
				where := fmt.Sprintf("%s and %s, seed %d step %d", pair[0], pair[1], seed, step)
				if rng.IntN(3) == 0 {
					now = now.Add(time.Duration(rng.IntN(int(w.Milliseconds())/2+1)) * time.Millisecond)
				}
				c := rng.IntN(2*n + 2)
				x, _ := weighted(t, p).AllowN(now, u, c)
				y, _ := weighted(t, q).AllowN(now, u, c)
				require.Equal(t, x, y, "%s: cost %d", where, c)
				r, _ := p.Remaining(now, u)
				s, _ := q.Remaining(now, u)
				require.Equal(t, r, s, "%s: remaining", where)
				require.Equal(t, p.RetryAfter(now, u), q.RetryAfter(now, u), "%s: retry-after", where)
			}
		}
	}
}

// TestDebtOraclesAreSound: the search oracle never calls the answers of a
// cost=debt model impossible, on points, widened intervals and in real
// time, and on points calls the opposite answer of a weighted request
// impossible (see weightedHistory).
func TestDebtOraclesAreSound(t *testing.T) {
	for _, spec := range debtSpecs {
		for _, mode := range oracleModes {
			t.Run(spec+"/"+mode.name, func(t *testing.T) {
				for _, seed := range testtier.Seeds(t, 4, 2) {
					weightedHistory(t, spec, mode, seed)
				}
			})
		}
	}
}

// TestOraclesFollowTheCost: the real-time oracle replays the model of the
// variant graded: a fresh user's request of cost 4 allowed under a burst
// of 1 is impossible for cost=whole and certain for cost=debt, whose
// oracle then calls a request allowed within the debt impossible.
func TestOraclesFollowTheCost(t *testing.T) {
	judge := func(spec string, ops ...TimedOp) []Judgement {
		o, err := NewOracle(MustVariant(spec), 5, time.Minute)
		require.NoError(t, err)
		var out []Judgement
		for _, op := range ops {
			j, _, err := o.Judge(op)
			require.NoError(t, err)
			out = append(out, j)
		}
		return out
	}
	big := TimedOp{Kind: OpAllow, User: "u", Cost: 4, Allowed: true, Lo: atMs(0), Hi: atMs(5)}
	early := TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: atMs(40_000), Hi: atMs(40_005)}
	late := TimedOp{Kind: OpAllow, User: "u", Allowed: true, Lo: atMs(50_000), Hi: atMs(50_005)}
	assert.Equal(t, []Judgement{Impossible}, judge("gcra:burst=1", big))
	assert.Equal(t, []Judgement{Certain, Impossible}, judge("gcra:burst=1,cost=debt", big, early))
	assert.Equal(t, []Judgement{Certain, Certain}, judge("gcra:burst=1,cost=debt", big, late))
	assert.Equal(t, []Judgement{Certain, Impossible}, judge("token-bucket:capacity=1,cost=debt", big, early))
}

// TestCostParameter: cost is a parameter of GCRA and token buckets,
// whole by default and left out of a variant's name then; debt is named.
func TestCostParameter(t *testing.T) {
	assert.Equal(t, "gcra:burst=limit", MustVariant("gcra:cost=whole").String())
	assert.Equal(t, "gcra:burst=1,cost=debt", MustVariant("gcra:burst=1,cost=debt").String())
	assert.Equal(t, CostWhole, MustVariant("token-bucket").Params[CostParam])
	_, err := ParseVariant("gcra:cost=partial")
	assert.ErrorContains(t, err, "want one of whole, debt")
	_, err = ParseVariant("fixed-window:cost=debt")
	assert.ErrorContains(t, err, "no parameter")
}
