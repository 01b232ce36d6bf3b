package suite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/suite"
)

// TestAGCRAIsNamed grades a correct GCRA, with a clock and without: it is
// failed (it is not a sliding log) and named as a GCRA.
func TestAGCRAIsNamed(t *testing.T) {
	for _, withClock := range []bool{true, false} {
		caps := contract.All()
		caps.StoreInspection, caps.SharedStore, caps.Clock = false, false, withClock
		target := suite.Target{Name: "gcra", Capabilities: caps,
			New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				return model.NewProfileLimiter(env.Clock, model.NewGCRA(env.MaxRequests, env.Window)), nil, nil
			}}
		rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/sliding-expiry", "strict/denied-not-logged"}}, target)
		require.NoError(t, err)
		named := false
		for _, r := range rep.Results {
			if r.Status == suite.Failed {
				for _, e := range r.Failure.Explained {
					named = named || strings.HasPrefix(e, "GCRA")
				}
			}
		}
		if !withClock && rep.Count(suite.Failed) == 0 && rep.Count(suite.Inconclusive) > 0 {
			t.Skip("inconclusive in real time on this machine (never a pass)")
		}
		assert.True(t, named, "clock %v: a GCRA is named as one:\n%v", withClock, rep.Results)
	}
}
