package mutants_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/honest"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
)

// aheadClock is a machine's clock that runs ahead of the grader's.
type aheadClock time.Duration

func (d aheadClock) Now() time.Time { return time.Now().Add(time.Duration(d)) }

// twoProcesses is one address in front of two processes of one limiter
// script, each passing its own clock to Redis as "now", taking turns: a
// service run twice behind a load balancer.
type twoProcesses struct {
	procs [2]contract.RateLimiterContract
	next  atomic.Uint32
}

func (p *twoProcesses) pick() contract.RateLimiterContract { return p.procs[p.next.Add(1)%2] }

func (p *twoProcesses) AllowRequest(ctx context.Context, user string) (bool, error) {
	return p.pick().AllowRequest(ctx, user)
}

func (p *twoProcesses) GetRemainingRequests(ctx context.Context, user string) (int, error) {
	return p.pick().GetRemainingRequests(ctx, user)
}

func (p *twoProcesses) Reset(ctx context.Context, user string) error {
	return p.pick().Reset(ctx, user)
}

func (p *twoProcesses) Configure(ctx context.Context, n int, w time.Duration) error {
	for _, l := range p.procs {
		if err := l.Configure(ctx, n, w); err != nil {
			return err
		}
	}
	return nil
}

// TestPerProcessClocksAreHinted grades, without clock control, an exact log
// in one atomic script run by two processes whose clocks are W/2 apart:
// the one behind does not count the entries of the one ahead, so a burst
// lets more than N through core/concurrent-4. The script is atomic, so the
// hint must say where "now" has to come from, not only that check and add
// must be one step.
func TestPerProcessClocksAreHinted(t *testing.T) {
	caps := contract.All()
	caps.Clock, caps.SharedStore, caps.StoreInspection = false, false, false
	two := suite.Target{Name: "two processes, two clocks", Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			p := &twoProcesses{}
			for i, clock := range []fakeclock.Clock{fakeclock.Real{}, aheadClock(env.Window / 2)} {
				l, err := honest.NewExactLog(honest.Store{Redis: env.Redis, Clock: clock, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
				if err != nil {
					return nil, nil, err
				}
				p.procs[i] = l
			}
			return p, nil, nil
		}}
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, IDs: []string{"core/concurrent-4"}, ReportDir: t.TempDir()}, two)
	require.NoError(t, err)
	r, ok := resultOf(rep, "core/concurrent-4")
	require.True(t, ok)
	if r.Status == result.Inconclusive {
		t.Skipf("inconclusive in real time on this machine (never a pass):\n%s", r.Message)
	}
	require.Equal(t, result.Failed, r.Status, r.Message)
	assert.Contains(t, r.Failure.Hint, `"now" must come from the store`, r.Message)
	assert.Contains(t, r.Failure.Hint, "pass their own clock", r.Message)

	// With the clock given, every instance reads the grader's: the hint of
	// a check-then-add race is about atomicity alone.
	for _, m := range mutants.All() {
		if m.Name != "non-atomic" {
			continue
		}
		rep, err := suite.Check(context.Background(), suite.Config{Redis: store, IDs: []string{"core/concurrent-4"}, ReportDir: t.TempDir()}, target(m))
		require.NoError(t, err)
		r, _ := resultOf(rep, "core/concurrent-4")
		require.Equal(t, result.Failed, r.Status, r.Message)
		assert.Contains(t, r.Failure.Hint, "one atomic step")
		assert.NotContains(t, r.Failure.Hint, "now")
	}
}

// phaseClock is a machine's clock whose first reading falls 3ms before a
// whole second: a limiter that truncates to whole seconds then sees its
// first requests in one second and a query a few milliseconds later in
// the next.
type phaseClock struct {
	once   sync.Once
	offset time.Duration
}

func (c *phaseClock) Now() time.Time {
	c.once.Do(func() {
		now := time.Now()
		c.offset = now.Truncate(time.Second).Add(time.Second - 3*time.Millisecond).Sub(now)
	})
	return time.Now().Add(c.offset)
}

// TestTruncatedRemainingIsCaughtAtAnyPhase grades, without clock
// control, a log whose GetRemainingRequests counts from the window's
// start truncated to whole seconds (python limits 2.8's moving window),
// on a clock whose first requests fall just before a whole second. The
// query just after they leave then counts from the next second, and
// answers right; core/remaining passed it so (issue 61: one run of
// limits 2.8 in the cards). The spec queries again just after its entry
// at W/2 leaves, half a window from that phase, and must fail it there.
func TestTruncatedRemainingIsCaughtAtAnyPhase(t *testing.T) {
	testtier.SkipShort(t, "grades in real time")
	caps := contract.All()
	caps.Clock = false
	truncating := suite.Target{Name: "remaining-truncated-start at a second's end", Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := mutants.RemainingTruncatedStart(mutants.Store{Redis: env.Redis, Clock: &phaseClock{}, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
			return lim, nil, err
		}}
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, IDs: []string{"core/remaining"}, ReportDir: t.TempDir()}, truncating)
	require.NoError(t, err)
	r, ok := resultOf(rep, "core/remaining")
	require.True(t, ok)
	require.Equal(t, result.RealTime, r.Mode)
	assert.Equal(t, result.Failed, r.Status, "a query that counts from a truncated start must be failed at some phase:\n%s", r.Message)
}
