package suite_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/reference"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// clockless is a target without clock control: it reads the Redis
// server's TIME, so the suite grades it in real time.
func clockless(name string, make func(suite.Env) (contract.RateLimiterContract, error)) suite.Target {
	caps := contract.All()
	caps.Clock = false
	return suite.Target{Name: name, Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := make(env)
			return lim, nil, err
		}}
}

// TestRealTimeMode grades the reference on Redis TIME with the whole
// catalogue, in real time, on a Redis of its own (the engine's): it runs
// beside the other parallel tests.
func TestRealTimeMode(t *testing.T) {
	testtier.SkipShort(t, "grades the reference in real time")
	t.Parallel()
	ctx := context.Background()
	ref := clockless("reference on Redis TIME", func(env suite.Env) (contract.RateLimiterContract, error) {
		return reference.New(env.Redis, reference.Options{MaxRequests: env.MaxRequests, Window: env.Window, Prefix: env.KeyPrefix})
	})
	ref.Capabilities.Cost = true // weighted requests, graded in real time too
	rep, err := suite.Check(ctx, suite.Config{Level: result.All}, ref)
	require.NoError(t, err)
	t.Log("\n" + report.String(rep))
	assert.NotEqual(t, result.NotConformant, rep.Verdict().Outcome, report.String(rep))
	for _, r := range rep.Results {
		if r.ID == "core/sliding-expiry" {
			assert.Contains(t, []result.Status{result.Passed, result.Inconclusive}, r.Status, r.Message)
			assert.Equal(t, result.RealTime, r.Mode)
		}
	}

	mixup := clockless("window-unit-mixup on Redis TIME", func(env suite.Env) (contract.RateLimiterContract, error) {
		return mutants.WindowUnitMixup(mutants.Store{Redis: env.Redis, Clock: nil, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
	})
	rep, err = suite.Check(ctx, suite.Config{IDs: []string{"core/sliding-expiry"}}, mixup)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	if rep.Results[0].Status == result.Inconclusive {
		t.Skipf("inconclusive in real time on this machine (never a pass):\n%s", rep.Results[0].Message)
	}
	assert.Equal(t, result.Failed, rep.Results[0].Status, rep.Results[0].Message)
	t.Log(rep.Results[0].Message)
}
