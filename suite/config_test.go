package suite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// windowDropped answers Configure with a window above contract.MaxWindow
// with no error, and keeps the window it had.
type windowDropped struct{ contract.RateLimiterContract }

func (w windowDropped) Configure(ctx context.Context, n int, d time.Duration) error {
	if d > contract.MaxWindow {
		return nil
	}
	return w.RateLimiterContract.Configure(ctx, n, d)
}

// TestInvalidConfigFailsAWindowTakenButIgnored: a window above the bounds
// may be taken, but then it must be in force; one taken and ignored is
// failed, with the clock and without it.
func TestInvalidConfigFailsAWindowTakenButIgnored(t *testing.T) {
	t.Parallel() // in memory
	for _, clock := range []bool{true, false} {
		m := targets.Model()
		target := m
		target.Capabilities.Clock = clock
		target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, closer, err := m.New(ctx, env)
			return windowDropped{lim}, closer, err
		}
		rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"robust/invalid-config"}}, target)
		require.NoError(t, err)
		require.Len(t, rep.Results, 1)
		r := rep.Results[0]
		assert.Equal(t, result.Failed, r.Status, "clock %v:\n%s", clock, r.Message)
		assert.Contains(t, r.Message, "the window taken is not in force", "clock %v", clock)
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, suite.Validate(suite.Config{}))
	require.NoError(t, suite.Validate(suite.Config{IDs: []string{"core/", "strict/linearizable"}, ExpectFail: []string{"core/reset"}}))
	tests := []struct {
		cfg  suite.Config
		want string
	}{
		{suite.Config{IDs: []string{"core/reset", "core/rset"}}, `unknown spec id "core/rset" (did you mean "core/reset"?)`},
		{suite.Config{IDs: []string{"zzz/"}}, `unknown spec id "zzz/"`},
		{suite.Config{ExpectFail: []string{"core/"}}, `unknown expected failure: spec id "core/"`},
		{suite.Config{Labels: []string{"stric"}}, `did you mean "strict"`},
		{suite.Config{Level: "extreme"}, "unknown level"},
		{suite.Config{Limit: -1}, "Config.Limit -1"},
		{suite.Config{Window: -1}, "Config.Window -1ns"},
		{suite.Config{Level: result.Core, IDs: []string{"strict/linearizable"}}, "no spec matches"},
		{suite.Config{RealTimeWindow: 1}, "RealTimeWindow"},
		{suite.Config{IDs: []string{"cor/"}}, `did you mean "core/"`},
		{suite.Config{IDs: []string{"reset"}}, `did you mean "core/reset"`},
		{suite.Config{IDs: []string{"strict/boundary"}}, `ids starting with it are strict/boundary-burst-epoch, strict/boundary-burst-first`},
		{suite.Config{IDs: []string{"core/sliding-expiry-realtime"}}, "was retired: it is now core/sliding-expiry"},
	}
	for _, tt := range tests {
		err := suite.Validate(tt.cfg)
		if assert.Error(t, err, "%+v", tt.cfg) {
			assert.Contains(t, err.Error(), tt.want)
		}
		assert.Zero(t, suite.Count(tt.cfg))
	}
}
