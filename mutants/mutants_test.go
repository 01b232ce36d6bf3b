package mutants_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/suite"
)

var store *redisenv.Redis

func TestMain(m *testing.M) {
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		println("mutants: " + err.Error())
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	os.Exit(code)
}

// target turns a mutant into something the suite grades.
func target(m mutants.Mutant) suite.Target {
	return suite.Target{
		Name:         m.Name,
		Capabilities: contract.All(),
		NeedsRedis:   true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := m.New(mutants.Store{Redis: env.Redis, Clock: env.Clock, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
			return lim, nil, err
		},
	}
}

// TestEveryMutantIsCaught is the grader's self-test: each mutant fails the
// spec meant to catch it.
func TestEveryMutantIsCaught(t *testing.T) {
	for _, m := range mutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			// Core and strict for every mutant, and the robust spec meant for
			// it: the store-outage spec takes seconds, and stops the Redis.
			cfg := suite.Config{Redis: store, Level: suite.Strict}
			if strings.HasPrefix(m.CaughtBy, "robust/") {
				cfg.Level, cfg.IDs = suite.Robust, []string{"core/", "strict/", m.CaughtBy}
			}
			rep, err := suite.Check(context.Background(), cfg, target(m))
			require.NoError(t, err)
			var caughtBy []string
			found := false
			for _, r := range rep.Results {
				if r.ID == m.CaughtBy {
					found = true
					if assert.Equal(t, suite.Failed, r.Status, "%s must fail %s", m.Name, m.CaughtBy) {
						// Caught for the right reason: a wrong answer or a broken
						// rule, never a panic or a fault around the limiter.
						require.NotNil(t, r.Failure, r.Message)
						assert.Contains(t, []suite.Kind{suite.KindWrongAnswer, suite.KindViolation, suite.KindHang}, r.Failure.Kind, r.Message)
						t.Logf("%s fails %s as it should:\n%s", m.Name, m.CaughtBy, r.Message)
					}
				}
				if r.Status == suite.Failed {
					caughtBy = append(caughtBy, r.ID)
				}
			}
			assert.True(t, found, "spec %s is not in the catalogue", m.CaughtBy)
			assert.Error(t, rep.Err(), "a mutant must not be conformant")
			t.Logf("%s (%s) is failed by %v", m.Name, m.Breaks, caughtBy)
		})
	}
}
