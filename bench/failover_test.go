package bench_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/bench"
)

// forgetful is an exact log until its store fails over, then a store that
// lost what it held: it admits every request (writes lost).
type forgetful struct {
	log    *prunedLog
	forgot *atomic.Bool
}

func (f forgetful) AllowRequest(ctx context.Context, user string) (bool, error) {
	if f.forgot.Load() {
		return true, nil
	}
	return f.log.AllowRequest(ctx, user)
}

// What a failover does to the limit is a figure, never the verdict: the
// requests admitted beyond the limit after it are counted apart, and the
// verdict rests on those before it, also when the failover errs (its
// promotion not seen: the Sentinel may have obeyed it all the same).
func TestAFailoverIsAFigure(t *testing.T) {
	for _, failErr := range []error{nil, errors.New("no new master named within 30s")} {
		forgot := &atomic.Bool{}
		lim := forgetful{log: &prunedLog{limit: 5, window: time.Second, log: map[string][]time.Time{}}, forgot: forgot}
		res, err := bench.Run(context.Background(), bench.Config{Instances: []bench.Limiter{lim}, Concurrency: 4,
			Duration: 800 * time.Millisecond, Users: 2, Limit: 5, Window: time.Second, UserPrefix: "fo-u", Seed: 1,
			FailoverAt: 300 * time.Millisecond, Failover: func(context.Context) error { forgot.Store(true); return failErr }})
		require.NoError(t, err)
		require.NotNil(t, res.Failover)
		require.NotNil(t, res.Failover.Before, "the check of the requests before the failover")
		assert.True(t, res.Failover.Before.Exact(), "before the failover the log is exact")
		assert.Positive(t, res.Failover.Beyond, "admitted beyond the limit after the failover")
		assert.False(t, res.Failed(), "a failover's figure is not the limiter's verdict (failover error: %v)", failErr)
		assert.Equal(t, failErr != nil, res.Failover.Error != "")
	}
}
