package suite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// The tests of this file hold the grader's own machinery to account: no
// verdict may come from it rather than from the limiter.

// served serves lim over protocol v1 with clock control, through wrap, and
// returns the remote target the command line would make of it.
func served(t *testing.T, lim func(fakeclock.Clock) contract.RateLimiterContract, wrap func(http.Handler) http.Handler) suite.Target {
	t.Helper()
	clock := fakeclock.New(time.Now())
	srv := httptest.NewServer(wrap(adapters.Handler(lim(clock), clock)))
	t.Cleanup(srv.Close)
	target, err := targets.Remote(context.Background(), []string{srv.URL}, 5*time.Second)
	require.NoError(t, err)
	return target
}

func modelLimiter(t *testing.T) func(fakeclock.Clock) contract.RateLimiterContract {
	return func(clock fakeclock.Clock) contract.RateLimiterContract {
		lim, err := model.NewLimiter(clock, 5, time.Minute)
		require.NoError(t, err)
		return lim
	}
}

// TestADroppedConnectionIsNotAVerdict: a correct limiter served over HTTP
// whose connection drops on one call (no answer: its outcome is unknown)
// is not failed; the spec that saw it is inconclusive, the run goes on.
func TestADroppedConnectionIsNotAVerdict(t *testing.T) {
	var allows atomic.Int64
	target := served(t, modelLimiter(t), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == adapters.PathAllow && allows.Add(1) == 4 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close() // a reset mid-call: the request may have been decided
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/allow-within-limit", "core/block-over-limit", "core/remaining"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 3)
	assert.Empty(t, rep.Aborted)
	statuses := map[result.Status]int{}
	for _, r := range rep.Results {
		statuses[r.Status]++
		assert.NotEqual(t, result.Failed, r.Status, "%s: a dropped connection is no verdict on the limiter:\n%s", r.ID, r.Message)
		if r.Status == result.Inconclusive {
			assert.Contains(t, r.Message, "no answer")
		}
	}
	assert.Equal(t, 1, statuses[result.Inconclusive], report.String(rep))
	assert.NotEqual(t, result.NotConformant, rep.Verdict().Outcome)
}

// TestAHistoryOfFailedCallsIsInconclusive: strict/linearizable on a target
// whose every call fails under the spec's concurrency decided nothing: a
// history of unknown outcomes is linearizable whatever the limiter does,
// so it is inconclusive, never a pass.
func TestAHistoryOfFailedCallsIsInconclusive(t *testing.T) {
	m := targets.Model()
	target := m
	calls := new(atomic.Int64)
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := m.New(ctx, env)
		return failingTail{lim, calls, 0}, closer, err
	}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/linearizable"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, result.Inconclusive, rep.Results[0].Status, rep.Results[0].Message)
	assert.NotEqual(t, result.Conformant, rep.Verdict().Outcome)
}

// hangsOnce blocks one AllowRequest, ignoring its context, until release
// is closed.
type hangsOnce struct {
	contract.RateLimiterContract
	calls   *atomic.Int64
	at      int64
	release chan struct{}
}

func (h hangsOnce) AllowRequest(ctx context.Context, u string) (bool, error) {
	if h.calls.Add(1) == h.at {
		<-h.release
	}
	return h.RateLimiterContract.AllowRequest(ctx, u)
}

// TestASpecThatNeverReturnsStopsTheRun: a target whose call hangs mid-spec,
// ignoring its context, fails that spec as hung; the grader waits a bounded
// time for the spec's goroutine and, as it does not return, stops the run
// there instead of going on beside it (run with -race: nothing touches
// what the spec still uses).
func TestASpecThatNeverReturnsStopsTheRun(t *testing.T) {
	t.Parallel() // in memory; it waits on the spec timeout
	m := targets.Model()
	target := m
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	calls := new(atomic.Int64)
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := m.New(ctx, env)
		return hangsOnce{lim, calls, 3, release}, closer, err
	}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/block-over-limit", "core/remaining"}, SpecTimeout: 2 * time.Second}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	first := rep.Results[0]
	assert.Equal(t, result.Failed, first.Status, first.Message)
	require.NotNil(t, first.Failure)
	assert.Equal(t, result.KindHang, first.Failure.Kind)
	assert.Contains(t, rep.Aborted, "did not return")
	assert.Equal(t, result.NotRun, rep.Results[1].Status)
	assert.Equal(t, result.NotConformant, rep.Verdict().Outcome, "a hang is the limiter's: exit 1")
}

// sentPanics is an instance that knows when its requests leave (as an
// endpoint does) and panics on one of them.
type sentPanics struct {
	contract.RateLimiterContract
	calls *atomic.Int64
}

func (s sentPanics) AllowRequestSent(ctx context.Context, u string) (bool, time.Time, error) {
	if s.calls.Add(1) == 20 {
		panic("boom in AllowRequestSent")
	}
	sent := time.Now()
	ok, err := s.AllowRequest(ctx, u)
	return ok, sent, err
}

// TestSentReportingCallsAreGuarded: a panic in an instance's
// AllowRequestSent, from one of strict/linearizable's goroutines, fails
// the spec as the target's panic instead of killing the grader.
func TestSentReportingCallsAreGuarded(t *testing.T) {
	m := targets.Model()
	target := m
	calls := new(atomic.Int64)
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := m.New(ctx, env)
		return sentPanics{lim, calls}, closer, err
	}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/linearizable"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	t.Logf("%s: %s %+v", r.ID, r.Status, r.Failure)
	assert.NotEqual(t, result.Passed, r.Status, r.Message)
	assert.NotEqual(t, result.Errored, r.Status, "the target's panic is not a fault of ours: %s", r.Message)
	assert.Contains(t, r.Message, "boom in AllowRequestSent")
}

// secondsOnly is a limiter written the way a popular tutorial's script is:
// it keeps the window in whole seconds, so a window under a second makes
// its store answer an error ("ERR value is not an integer").
type secondsOnly struct {
	contract.RateLimiterContract
	mu     sync.Mutex
	window time.Duration
}

func (s *secondsOnly) Configure(ctx context.Context, n int, w time.Duration) error {
	if err := s.RateLimiterContract.Configure(ctx, n, w); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = w
	return nil
}

func (s *secondsOnly) AllowRequest(ctx context.Context, u string) (bool, error) {
	s.mu.Lock()
	w := s.window
	s.mu.Unlock()
	if w < time.Second {
		return false, fmt.Errorf("%w: ERR value is not an integer or out of range", contract.ErrStore)
	}
	return s.RateLimiterContract.AllowRequest(ctx, u)
}

// TestAnErrorOnAValidConfigurationIsAFailure: a served limiter that errors
// only under a window strict/config-range sets (and answers under any
// other) is alive: the spec fails with its own hint, and the run goes on,
// the liveness probe made under a configuration known to work.
func TestAnErrorOnAValidConfigurationIsAFailure(t *testing.T) {
	target := served(t, func(clock fakeclock.Clock) contract.RateLimiterContract {
		return &secondsOnly{RateLimiterContract: modelLimiter(t)(clock), window: time.Minute}
	}, func(h http.Handler) http.Handler { return h })
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/config-range", "strict/reset-race"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2, report.String(rep))
	assert.Empty(t, rep.Aborted)
	configRange, after := rep.Results[0], rep.Results[1]
	require.Equal(t, "strict/config-range", configRange.ID)
	assert.Equal(t, result.Failed, configRange.Status, configRange.Message)
	assert.True(t, strings.Contains(configRange.Message, "hint: keep N and W exact"), configRange.Message)
	assert.Equal(t, result.Passed, after.Status, "%s ran after the failure: %s", after.ID, after.Message)
	assert.Equal(t, result.NotConformant, rep.Verdict().Outcome)
}
