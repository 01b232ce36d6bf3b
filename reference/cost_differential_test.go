package reference_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
)

// servedVariants are every built-in variant the reference implements
// (reference.Implements): each algorithm's parameters in every
// combination of their listed values, a sized one (burst, capacity) at
// "limit", below N and above it; the sliding log, and its compact LIST
// as "compact". The reading of a change of configuration is left at its
// default: the schedules keep theirs.
func servedVariants(t *testing.T, n int) []string {
	t.Helper()
	out := []string{"sliding-log", "compact"}
	for _, alg := range model.Builtin().All() {
		if alg.Name == model.ProfileSlidingLog {
			continue
		}
		combos := []string{""}
		for _, p := range alg.Params {
			if p.Name == "reconfigure" {
				continue
			}
			values := p.Values
			if values == nil {
				values = []string{"limit", "2", fmt.Sprint(n + 2)}
			}
			var next []string
			for _, c := range combos {
				for _, v := range values {
					next = append(next, c+","+p.Name+"="+v)
				}
			}
			combos = next
		}
		for _, c := range combos {
			spec := alg.Name + ":" + strings.TrimPrefix(c, ",")
			if reference.Implements(model.MustVariant(spec)) == nil {
				out = append(out, spec)
			}
		}
	}
	return out
}

// costPrefix is a key prefix of the test's own, its keys deleted after it.
func costPrefix(t *testing.T, r *redisenv.Redis) string {
	p := fmt.Sprintf("rlc-cost:%s:%d:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := redisenv.ScanKeys(ctx, r.Client, redisenv.GlobEscape(p)+"*")
		for _, k := range keys {
			r.Client.Del(ctx, k)
		}
	})
	return p
}

// TestAllowRequestNMatchesTheModel decides random schedules of weighted
// requests (costs 0 to N+1) and remaining queries, of a few users, on a
// fake clock moving by steps around W/N and W, on the reference's Redis
// implementation of every variant it serves and on the variant's model
// (model.Weighted): every answer and every remaining count is the same.
func TestAllowRequestNMatchesTheModel(t *testing.T) {
	t.Parallel() // keys of its own on the shared Redis
	r := reference.SharedRedis()
	const n, steps = 4, 250
	for _, spec := range servedVariants(t, n) {
		t.Run(spec, func(t *testing.T) {
			h := fnv.New64a()
			h.Write([]byte(spec))
			rng := rand.New(rand.NewPCG(41, h.Sum64()))
			// Windows of 10s or more: Redis expires the keys in real
			// time, which must never catch up with a fake clock that
			// stands still (W/N is a fraction of a ms in two of them).
			w := []time.Duration{10_001 * time.Millisecond, time.Minute, time.Hour + 7*time.Millisecond}[rng.IntN(3)]
			// A start off the windows' grid, so that epoch windows split.
			clk := fakeclock.New(time.UnixMilli(1_767_225_600_000 + rng.Int64N(w.Milliseconds())))
			variant := model.MustVariant(strings.TrimPrefix(spec, "compact"))
			opts := reference.Options{MaxRequests: n, Window: w, Prefix: costPrefix(t, r), Clock: clk}
			var lim contract.RateLimiterContract
			var err error
			if spec == "compact" {
				lim, err = reference.NewCompact(r.Client, opts)
			} else {
				lim, err = reference.NewProfile(r.Client, variant, opts)
			}
			require.NoError(t, err)
			ref, ok := lim.(contract.CostLimiter)
			require.True(t, ok, "%T is a contract.CostLimiter", lim)
			m, err := variant.New(n, w)
			require.NoError(t, err)
			weighted, ok := m.(model.Weighted)
			require.True(t, ok, "%T is a model.Weighted", m)
			runCostSchedule(t, rng, clk, ref, m, weighted, n, steps)
		})
	}
}

// runCostSchedule makes steps random calls on ref and the model, failing
// at the first answer that differs.
func runCostSchedule(t *testing.T, rng *rand.Rand, clk *fakeclock.Fake, ref contract.CostLimiter, m model.Profile, weighted model.Weighted, n, steps int) {
	t.Helper()
	ctx := context.Background()
	w := m.Window().Milliseconds()
	start := clk.Now()
	var trace []string
	var heavyAllowed, refused int // the schedule is worth something
	defer func() {
		if !t.Failed() {
			require.Positive(t, heavyAllowed, "no request of cost 2 or more was allowed")
			require.Positive(t, refused, "no request was refused")
		}
	}()
	for i := range steps {
		switch rng.IntN(6) { // time moves in whole ms, by about T, up to W, or barely
		case 0:
			clk.Advance(time.Duration(w/int64(n)/int64(1+rng.IntN(3))) * time.Millisecond)
		case 1:
			clk.Advance(time.Duration(rng.Int64N(w+1)) * time.Millisecond)
		case 2:
			clk.Advance(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
		now := clk.Now()
		at := now.Sub(start)
		user := fmt.Sprint("u", rng.IntN(2))
		if rng.IntN(4) == 0 {
			want, err := m.Remaining(now, user)
			require.NoError(t, err)
			got, err := ref.GetRemainingRequests(ctx, user)
			require.NoError(t, err)
			trace = append(trace, fmt.Sprintf("%d +%v remaining(%s) = %d", i, at, user, want))
			require.Equal(t, want, got, "step %d: remaining of %s; the schedule:\n%s", i, user, strings.Join(trace, "\n"))
			continue
		}
		cost := rng.IntN(n + 2)
		want, err := weighted.AllowN(now, user, cost)
		require.NoError(t, err)
		got, err := ref.AllowRequestN(ctx, user, cost)
		require.NoError(t, err)
		trace = append(trace, fmt.Sprintf("%d +%v AllowN(%s, %d) = %v", i, at, user, cost, want))
		if want && cost >= 2 {
			heavyAllowed++
		} else if !want {
			refused++
		}
		require.Equal(t, want, got, "step %d: AllowN(%s, %d); the schedule:\n%s", i, user, cost, strings.Join(trace, "\n"))
	}
}
