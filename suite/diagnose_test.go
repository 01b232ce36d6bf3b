package suite_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/suite"
)

// algoLimiter serves an alternative algorithm of package model as a
// limiter in memory, on a clock: a correct GCRA, say, which is not a log.
type algoLimiter struct {
	mu    *sync.Mutex
	alg   model.Algorithm
	clock fakeclock.Clock
}

func (l algoLimiter) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := contract.ValidateUserID(u); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.alg.Allow(l.clock.Now(), u), ctx.Err()
}

func (l algoLimiter) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if err := contract.ValidateUserID(u); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := l.alg.Remaining(l.clock.Now(), u)
	return n, ctx.Err()
}

func (l algoLimiter) Reset(_ context.Context, u string) error {
	if err := contract.ValidateUserID(u); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.alg.Reset(u)
	return nil
}

func (l algoLimiter) Configure(_ context.Context, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.alg.Configure(n, w)
	return nil
}

// TestAGCRAIsNamed grades a correct GCRA, with a clock and without: it is
// failed (it is not a sliding log) and named as a GCRA.
func TestAGCRAIsNamed(t *testing.T) {
	for _, withClock := range []bool{true, false} {
		caps := contract.All()
		caps.StoreInspection, caps.SharedStore, caps.Clock = false, false, withClock
		target := suite.Target{Name: "gcra", Capabilities: caps,
			New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				return algoLimiter{&sync.Mutex{}, model.NewGCRA(env.MaxRequests, env.Window), env.Clock}, nil, nil
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
