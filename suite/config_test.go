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
