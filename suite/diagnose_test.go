package suite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// TestAGCRAIsNamed grades a correct GCRA, with a clock and without: it is
// failed (it is not a sliding log) and named as a GCRA.
func TestAGCRAIsNamed(t *testing.T) {
	t.Parallel() // in memory
	for _, withClock := range []bool{true, false} {
		caps := contract.All()
		caps.StoreInspection, caps.SharedStore, caps.Clock = false, false, withClock
		target := suite.Target{Name: "gcra", Capabilities: caps,
			New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				return model.NewProfileLimiter(env.Clock, gcra(env)), nil, nil
			}}
		rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/sliding-expiry", "strict/denied-not-logged"}}, target)
		require.NoError(t, err)
		named := false
		for _, r := range rep.Results {
			if r.Status == result.Failed {
				for _, e := range r.Failure.Explained {
					named = named || strings.HasPrefix(e, "GCRA")
				}
			}
		}
		if !withClock && rep.Count(result.Failed) == 0 && rep.Count(result.Inconclusive) > 0 {
			t.Skip("inconclusive in real time on this machine (never a pass)")
		}
		assert.True(t, named, "clock %v: a GCRA is named as one:\n%v", withClock, rep.Results)
	}
}

// takesAnyConfig accepts every configuration, invalid ones too, and keeps
// the one in force.
type takesAnyConfig struct{ contract.RateLimiterContract }

func (l takesAnyConfig) Configure(ctx context.Context, n int, w time.Duration) error {
	if contract.ValidateConfig(n, w) != nil {
		return nil
	}
	return l.RateLimiterContract.Configure(ctx, n, w)
}

// TestEachSpecGivesItsOwnHintUnderAProfile: under another profile than the
// sliding log, a spec whose rule is not about timing gives its own hint,
// not the profile's "replay the timeline against its rules"; one about
// timing gives the profile's.
func TestEachSpecGivesItsOwnHintUnderAProfile(t *testing.T) {
	target := suite.Target{Name: "gcra taking any config", Capabilities: contract.All(),
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			return takesAnyConfig{model.NewProfileLimiter(env.Clock, gcra(env))}, nil, nil
		}}
	target.Capabilities.StoreInspection, target.Capabilities.SharedStore = false, false
	rep, err := suite.Check(context.Background(), suite.Config{Profile: "gcra", IDs: []string{"robust/invalid-config"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Equal(t, result.Failed, r.Status, r.Message)
	assert.Contains(t, r.Failure.Hint, "validate both values", r.Message)
	assert.NotContains(t, r.Message, "replay the timeline")

	// A GCRA graded as a fixed window fails on timing, named: the hint
	// says which profile it implements.
	rep, err = suite.Check(context.Background(), suite.Config{Profile: "fixed-window", IDs: []string{"core/sliding-expiry"}}, target)
	require.NoError(t, err)
	r = rep.Results[0]
	require.Equal(t, result.Failed, r.Status, r.Message)
	assert.Contains(t, r.Failure.Hint, "--profile gcra", r.Message)
}

// gcra is the GCRA model of env's configuration, burst N.
func gcra(env suite.Env) model.Profile {
	p, err := model.MustVariant("gcra").New(env.MaxRequests, env.Window)
	if err != nil {
		panic(err) // the suite gives only valid configurations
	}
	return p
}
