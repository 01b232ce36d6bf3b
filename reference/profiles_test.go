package reference_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/reference"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// profileSpecs are the profiles whose Redis implementations are graded.
var profileSpecs = []string{
	"fixed-window:align=epoch", "fixed-window:align=first-grid,count-denied=true,query=read",
	"fixed-window:align=first-hit", "fixed-window:align=first-hit,count-denied=true,query=read",
	"fixed-window:align=first-hit,query=write", "fixed-window:align=first-grid,count-denied=true,query=write",
	"sliding-counter", "sliding-counter:count-denied=true", "sliding-counter:align=first-grid,count-denied=true",
	"sliding-counter:admit=at-most", "sliding-counter:align=first-grid,admit=at-most,count-denied=true",
	"gcra", "gcra:burst=2", "gcra:burst=1,cost=debt", "gcra:cost=debt",
	"token-bucket:capacity=8", "token-bucket:refill=interval,capacity=3",
	"token-bucket:refill=interval,expire=idle,query=write", "token-bucket:refill=second", "token-bucket:refill=second,capacity=3",
	"fixed-window:align=go-zero", "sliding-counter:align=go-zero,admit=at-most,count-denied=true",
	"fixed-window:align=first-second,count-denied=true",
	"fixed-window:align=elastic,count-denied=true,query=read", "fixed-window:align=elastic-allowed",
}

// obtainRedis gives the test the package's one Redis (its TestMain's),
// which a test may stop and start again (robust/store-outage) but never
// closes.
func obtainRedis(t *testing.T) *redisenv.Redis {
	t.Helper()
	return reference.SharedRedis()
}

// allBut lists the catalogue's spec ids but those given.
func allBut(ids ...string) []string {
	var out []string
	for _, s := range suite.Specs() {
		if !slices.Contains(ids, s.ID) {
			out = append(out, s.ID)
		}
	}
	return out
}

// profileTarget is the Redis implementation of profile p on the suite's
// fake clock (targets.ReferenceProfile).
func profileTarget(t *testing.T, p string) suite.Target {
	t.Helper()
	tg, err := targets.ReferenceProfile(model.MustVariant(p))
	require.NoError(t, err)
	return tg
}

// requireClean asserts that no spec of rep failed or errored, and that
// most of the catalogue graded the target.
func requireClean(t *testing.T, rep *result.Report, p string, minPassed int) {
	t.Helper()
	for _, r := range rep.Results {
		assert.NotEqual(t, result.Failed, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
		assert.NotEqual(t, result.Errored, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
	}
	assert.GreaterOrEqual(t, rep.Count(result.Passed), minPassed, "most of the catalogue grades %s", p)
}

// Each profile's Redis implementation passes every spec that grades its
// profile, robust ones included (key TTLs are the model's lifetimes).
//
// robust/store-outage stops the Redis for seconds and grades what every
// profile's Go wrapper does with a store error, the same code for all: it
// grades a sample of the profiles, which rotates with the seed, and all of
// them in the full tier (its rest: the others).
func TestProfileImplementationsPassTheirProfile(t *testing.T) {
	// Not parallel: robust/store-outage stops the shared Redis.
	r := obtainRedis(t)
	outage := map[string]bool{}
	for _, p := range testtier.Sample(t, "profiles", profileSpecs, testtier.Quick(2, 0), func(p string) string { return p }) {
		outage[p] = true
	}
	if testtier.Rest() {
		// The default tier graded every profile, the store's outage on a
		// sample of them: the rest is the outage of the others.
		for p := range outage {
			t.Run(p, func(t *testing.T) {
				cfg := suite.Config{Profile: p, Redis: r, ReportDir: t.TempDir(), SpecTimeout: 10 * time.Minute, IDs: []string{"robust/store-outage"}}
				rep, err := suite.Check(context.Background(), cfg, profileTarget(t, p))
				require.NoError(t, err)
				requireClean(t, rep, p, 1)
			})
		}
		return
	}
	// go test -short grades a sample of the profiles.
	for _, p := range testtier.Sample(t, "profiles", profileSpecs, testtier.Quick(len(profileSpecs), 3), func(p string) string { return p }) {
		t.Run(p, func(t *testing.T) {
			// A loaded machine's calls may be slow (make test has seen
			// 140ms a Redis call): the specs get the time they need.
			cfg := suite.Config{Profile: p, Redis: r, ReportDir: t.TempDir(), SpecTimeout: 10 * time.Minute}
			if !outage[p] {
				cfg.IDs = allBut("robust/store-outage")
			}
			rep, err := suite.Check(context.Background(), cfg, profileTarget(t, p))
			require.NoError(t, err)
			requireClean(t, rep, p, 20)
		})
	}
}

// An implementation graded against a profile that decides otherwise fails
// the spec where they differ, with a wrong answer: the grading can fail.
func TestProfileImplementationsFailOtherProfiles(t *testing.T) {
	t.Parallel() // keys of its own on the shared Redis
	r := obtainRedis(t)
	for _, c := range []struct{ impl, graded, spec string }{
		{"fixed-window:align=epoch", "", "strict/boundary-burst-epoch"},
		{"fixed-window:align=first-hit", "", "strict/boundary-burst-first"},
		{"fixed-window:align=first-hit", "fixed-window:align=epoch", "strict/boundary-burst-epoch"},
		{"sliding-counter", "", "strict/boundary-burst-epoch"},
		{"sliding-counter:admit=at-most", "sliding-counter", "strict/boundary-burst-epoch"},
		{"sliding-counter", "sliding-counter:admit=at-most", "strict/boundary-burst-epoch"},
		{"gcra", "fixed-window:align=epoch", "strict/differential"},
		{"gcra:burst=2", "gcra", "core/allow-within-limit"},
		// A weighted request into debt, graded whole, and the other way:
		// a cost of 3 where 2 are left, allowed into debt, refused whole.
		{"gcra:cost=debt", "gcra", "strict/cost-all-or-nothing"},
		{"gcra", "gcra:cost=debt", "strict/cost-all-or-nothing"},
		{"gcra:burst=1,cost=debt", "gcra:burst=1", "strict/cost-never-fit"},
		{"gcra:burst=1", "gcra:burst=1,cost=debt", "strict/cost-never-fit"},
		{"token-bucket:capacity=8", "token-bucket", "core/block-over-limit"},
		{"token-bucket:refill=interval,capacity=3", "token-bucket:capacity=3", "strict/differential"},
		{"token-bucket:refill=interval,expire=idle,query=write", "token-bucket:refill=interval", "strict/differential"},
		{"fixed-window:align=first-hit,query=write", "fixed-window:align=first-hit", "strict/differential"},
		{"fixed-window:align=first-grid,query=write", "fixed-window:align=first-grid", "strict/differential"},
		// A window opened at the second's start, not at the request's.
		{"fixed-window:align=first-second", "fixed-window:align=first-hit", "strict/differential"},
		{"fixed-window:align=first-hit", "fixed-window:align=first-second", "strict/differential"},
		// A window whose expiry each request renews holds its count
		// past W after the request that opened it; one renewed by
		// allowed requests only ends W after the last of those.
		{"fixed-window:align=elastic,count-denied=true", "fixed-window:align=first-hit,count-denied=true", "strict/denied-not-logged"},
		{"fixed-window:align=first-hit,count-denied=true", "fixed-window:align=elastic,count-denied=true", "strict/denied-not-logged"},
		{"fixed-window:align=elastic-allowed", "fixed-window:align=first-hit", "strict/differential"},
		{"fixed-window:align=first-hit", "fixed-window:align=elastic-allowed", "strict/differential"},
		{"fixed-window:align=elastic", "fixed-window:align=elastic-allowed", "strict/denied-not-logged"},
		{"token-bucket:refill=interval", "token-bucket:refill=interval,expire=idle,query=write", "strict/differential"},
		// Windows of 30 days, 365 days and 100 years lie elsewhere on
		// Go's grid (time.Time.Truncate's) than on the epoch's.
		{"fixed-window:align=go-zero", "fixed-window:align=epoch", "strict/config-range"},
		{"fixed-window:align=epoch", "fixed-window:align=go-zero", "strict/config-range"},
		{"sliding-counter:align=go-zero,admit=at-most,count-denied=true", "sliding-counter:admit=at-most,count-denied=true", "strict/config-range"},
	} {
		t.Run(c.impl+" as "+model.MustVariant(c.graded).String(), func(t *testing.T) {
			rep, err := suite.Check(context.Background(), suite.Config{Profile: c.graded, Redis: r, IDs: []string{c.spec}, ReportDir: t.TempDir()}, profileTarget(t, c.impl))
			require.NoError(t, err)
			require.Len(t, rep.Results, 1)
			res := rep.Results[0]
			require.Equal(t, result.Failed, res.Status, "%s graded as %q must fail %s:\n%s", c.impl, c.graded, c.spec, res.Message)
			require.NotNil(t, res.Failure)
			assert.Contains(t, []result.Kind{result.KindWrongAnswer, result.KindViolation}, res.Failure.Kind, res.Message)
		})
	}
}

// strict/differential tells a query that opens a window (query=write)
// from one that does not on every seed: these seeds once drew schedules
// that never queried a user without state before the requests that show
// it, and the implementation passed graded as query=read.
func TestDifferentialFindsAQueryThatOpensAWindow(t *testing.T) {
	t.Parallel() // keys of its own on the shared Redis
	r := obtainRedis(t)
	for _, c := range []struct {
		impl  string
		seeds []uint64
	}{
		{"fixed-window:align=first-grid,query=write", []uint64{66, 98, 152, 183, 186, 223, 269}},
		{"fixed-window:align=first-hit,query=write", []uint64{116}},
	} {
		graded := strings.TrimSuffix(c.impl, ",query=write")
		for _, seed := range c.seeds {
			rep, err := suite.Check(context.Background(), suite.Config{Seed: seed, Profile: graded, Redis: r, IDs: []string{"strict/differential"}, ReportDir: t.TempDir()}, profileTarget(t, c.impl))
			require.NoError(t, err)
			require.Len(t, rep.Results, 1)
			assert.Equal(t, result.Failed, rep.Results[0].Status, "%s graded as %s, seed %d", c.impl, graded, seed)
		}
	}
}

// Without clock control the scripts read the Redis server's TIME; graded
// in real time they fail nothing (a spec real time cannot decide is
// skipped, never passed). make test grades one of the three profiles
// here, which rotates with the seed (see below); the full tier all.
func TestProfileImplementationsInRealTime(t *testing.T) {
	testtier.SkipShort(t, "grades the profiles' scripts in real time")
	t.Parallel() // beside the other parallel tests: real time mostly waits
	r := obtainRedis(t)
	// The search oracle of a profile other than the sliding log costs
	// seconds of CPU per real-time burst (under -race): make test grades
	// one of them, which rotates with the seed, the full tier all.
	for _, p := range testtier.Sample(t, "profiles", []string{"fixed-window:align=first-hit", "gcra:burst=2", "fixed-window:align=elastic,count-denied=true", "gcra:burst=2,cost=debt"}, 1, func(p string) string { return p }) {
		t.Run(p, func(t *testing.T) {
			t.Parallel() // real time mostly waits
			spec := model.MustVariant(p)
			caps := contract.All()
			caps.Clock, caps.Cost = false, true
			tg := suite.Target{Name: "reference:" + p + " on Redis TIME", Capabilities: caps, NeedsRedis: true,
				KeyOf: func(prefix, userID string) string { return prefix + "{" + userID + "}" },
				New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
					lim, err := reference.NewProfile(env.Redis, spec, reference.Options{
						MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix,
					})
					return lim, nil, err
				}}
			rep, err := suite.Check(context.Background(), suite.Config{Profile: p, Redis: r, Level: result.Strict, ReportDir: t.TempDir()}, tg)
			require.NoError(t, err)
			for _, res := range rep.Results {
				if res.Status == result.Skipped || res.Status == result.NotRun {
					continue
				}
				assert.Equal(t, result.RealTime, res.Mode, res.ID)
				if res.Status == result.Inconclusive {
					t.Logf("%s is inconclusive in real time on this machine:\n%s", res.ID, res.Message)
				}
			}
			for _, res := range rep.Results {
				assert.NotEqual(t, result.Failed, res.Status, "%s:\n%s", res.ID, res.Message)
			}
			if rep.Aborted != "" {
				t.Skipf("the run stopped early on this machine (never a pass): %s", rep.Aborted)
			}
			requireClean(t, rep, p, 10)
		})
	}
}

// Configurations whose products pass 2^52 are refused, not miscomputed.
func TestProfileExactBound(t *testing.T) {
	r := obtainRedis(t)
	ctx := context.Background()
	lim, err := reference.NewProfile(r.Client, model.MustVariant("gcra"), reference.Options{MaxRequests: 10, Window: contract.MaxWindow, Prefix: "rlc-bound:"})
	require.NoError(t, err)
	err = lim.Configure(ctx, 10_000, contract.MaxWindow)
	require.ErrorIs(t, err, contract.ErrInvalidConfig)
	require.NoError(t, lim.Configure(ctx, 2, contract.MaxWindow))
	_, err = reference.NewProfile(r.Client, model.MustVariant("sliding-counter"), reference.Options{MaxRequests: 1 << 40, Window: contract.MaxWindow})
	require.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = reference.NewProfile(r.Client, model.MustVariant("fixed-window"), reference.Options{MaxRequests: contract.MaxLimit, Window: contract.MaxWindow})
	require.NoError(t, err, "fixed windows compute no products")
	_, err = reference.NewProfile(r.Client, model.MustVariant("gcra"), reference.Options{MaxRequests: 1, Window: 0})
	require.ErrorIs(t, err, contract.ErrInvalidConfig)
	_, err = reference.NewProfile(r.Client, model.MustVariant("gcra"), reference.Options{MaxRequests: 1, Window: 1, Prefix: "a{b}"})
	require.Error(t, err)

	// Under cost=debt a cost may pass the burst: n×W above 2^52 is
	// refused as a cost it cannot compute, below it decided.
	debt, err := reference.NewProfile(r.Client, model.MustVariant("gcra:cost=debt"), reference.Options{MaxRequests: 10, Window: contract.MaxWindow, Prefix: "rlc-bound-debt:"})
	require.NoError(t, err)
	most := int(reference.ExactBound / contract.MaxWindow.Milliseconds())
	_, err = debt.(contract.CostLimiter).AllowRequestN(ctx, "u", most+1)
	require.ErrorIs(t, err, contract.ErrInvalidCost)
	ok, err := debt.(contract.CostLimiter).AllowRequestN(ctx, "u", most)
	require.NoError(t, err)
	require.True(t, ok, "a cost of %d, into debt", most)
	require.NoError(t, debt.Reset(ctx, "u"))
}

// Identify names each profile's Redis implementation alone (or with the
// profiles that decide as it does on every history with one
// configuration); without Configure, the INCR-first fixed window opened by
// the first request (as most fixed-window libraries write it) is one group
// with the profiles that decide as it does while the limit stays the same,
// not an ambiguity.
func TestIdentifyNamesEachImplementation(t *testing.T) {
	t.Parallel() // keys of its own on the shared Redis
	r := obtainRedis(t)
	for _, p := range profileSpecs {
		t.Run(p, func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{Redis: r}, profileTarget(t, p))
			require.NoError(t, err)
			require.Len(t, id.Fits, 1, "identified: %+v", id.Fits)
			assert.Contains(t, append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...), model.MustVariant(p).String())
		})
	}
	t.Run("fixed-window:align=first-hit,count-denied=true,query=read without Configure", func(t *testing.T) {
		tg := profileTarget(t, "fixed-window:align=first-hit,count-denied=true,query=read")
		tg.Capabilities.Configure = false
		id, err := suite.Identify(context.Background(), suite.Config{Redis: r}, tg)
		require.NoError(t, err)
		require.Len(t, id.Fits, 1, "one group: %+v", id.Fits)
		assert.ElementsMatch(t, []string{"fixed-window:align=first-hit,count-denied=false,query=read", "fixed-window:align=first-hit,count-denied=true,query=read", "token-bucket:capacity=limit,expire=full,query=read,refill=interval"},
			append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...))
	})
}

// The profile scripts read a change of configuration as their model's
// first reading: a variant pinning another has no implementation here,
// which NewProfile says rather than grading the script as it.
func TestProfileImplementsItsFirstReadingOnly(t *testing.T) {
	for spec, ok := range map[string]bool{
		"gcra": true, "gcra:reconfigure=keep-tat": true, "gcra:reconfigure=settle": false,
		"fixed-window:reconfigure=relay": true, "fixed-window:reconfigure=finish": false,
		"token-bucket:reconfigure=lazy": true, "token-bucket:reconfigure=reset": false, "sliding-log": true,
	} {
		err := reference.Implements(model.MustVariant(spec))
		if ok {
			assert.NoError(t, err, spec)
		} else if assert.Error(t, err, spec) {
			assert.Contains(t, err.Error(), "reads a change of configuration as", spec)
		}
	}
	assert.NoError(t, reference.Implements(model.MustVariant("gcra:cost=debt")))
	err := reference.Implements(model.MustVariant("token-bucket:cost=debt"))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "decides a weighted request whole only")
	}
	assert.NoError(t, reference.Implements(model.MustVariant("sliding-counter:align=first-grid")))
	err = reference.Implements(model.MustVariant("sliding-counter:align=first-grid,renew=any"))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "by counted requests only (renew=counted)")
	}
}
