package suite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// wholeSecondService is a correct sliding log served over protocol v1 that
// answers a window_ms that is not a whole second with 400, as a service
// over python's limits does. With clock it takes the grader's clock; with
// delay it answers each call that much later; with declare it says so in
// its capabilities (window_granularity_ms). fine counts the valid
// windows it refused.
type wholeSecondService struct {
	clock   bool
	delay   time.Duration
	declare bool
	fine    atomic.Int64
}

func (s *wholeSecondService) serve(t *testing.T) suite.Target {
	t.Helper()
	var h http.Handler
	if s.clock {
		clock := fakeclock.New(time.Now())
		lim, err := model.NewLimiter(clock, 5, time.Minute)
		require.NoError(t, err)
		h = adapters.Handler(lim, clock)
	} else {
		lim, err := model.NewLimiter(fakeclock.Real{}, 5, time.Minute)
		require.NoError(t, err)
		h = adapters.Handler(lim, nil)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(s.delay) // the service's own latency, not a wait of the test's
		switch r.URL.Path {
		case adapters.PathCapabilities:
			if s.declare {
				fmt.Fprintf(w, `{"clock":%t,"configure":true,"remaining":true,"reset":true,"window_granularity_ms":1000}`, s.clock)
				return
			}
		case adapters.PathConfigure:
			raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
			require.NoError(t, err)
			var body struct {
				WindowMs int64 `json:"window_ms"`
			}
			if json.Unmarshal(raw, &body) == nil && body.WindowMs%1000 != 0 {
				if body.WindowMs > 0 && body.WindowMs <= contract.MaxWindow.Milliseconds() {
					s.fine.Add(1) // a valid window refused
				}
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"works in whole seconds"}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(raw))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	target, err := targets.Remote(context.Background(), []string{srv.URL}, 5*time.Second)
	require.NoError(t, err)
	return target
}

// failedIDs lists the ids of the specs of rep that failed.
func failedIDs(rep *result.Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status == result.Failed || r.Status == result.Errored {
			out = append(out, r.ID)
		}
	}
	return out
}

// A correct limiter that takes only whole-second windows fails
// strict/config-range alone, which says why; every other spec is graded
// with windows it takes, and the report says the run learned that, from
// one probe or from the declaration (then without refusing anything).
func TestAWholeSecondTargetFailsOnlyConfigRange(t *testing.T) {
	for _, declare := range []bool{false, true} {
		t.Run(fmt.Sprintf("declared=%t", declare), func(t *testing.T) {
			t.Parallel()
			svc := &wholeSecondService{clock: true, declare: declare}
			rep, err := suite.Check(context.Background(), suite.Config{Level: result.All}, svc.serve(t))
			require.NoError(t, err)
			assert.Equal(t, []string{"strict/config-range"}, failedIDs(rep), report.String(rep))
			for _, r := range rep.Results {
				if r.ID == "strict/config-range" {
					assert.Contains(t, r.Message, "takes only windows in whole multiples of 1s")
				}
				assert.NotEqual(t, result.Inconclusive, r.Status, "%s: %s", r.ID, r.Message)
			}
			notes := strings.Join(rep.Notes, "\n")
			assert.Contains(t, notes, "the target takes only windows in whole multiples of 1s")
			if declare {
				assert.Contains(t, notes, "as it declares")
				assert.EqualValues(t, 1, svc.fine.Load(), "only strict/config-range's Configure(1, 1ms) is refused")
			} else {
				assert.Contains(t, notes, "it refused Configure(5, 1.5s)")
			}
			core, err := suite.Check(context.Background(), suite.Config{Level: result.Core}, svc.serve(t))
			require.NoError(t, err)
			assert.Equal(t, result.Conformant, core.Verdict().Outcome, report.String(core))
		})
	}
}

// The same service without a clock, answering in 30ms a call: the
// real-time window raised for its round trips is a whole number of
// seconds, and nothing but strict/config-range fails, for the refusal
// alone (a spec may be inconclusive on a loaded machine, never failed).
func TestASlowWholeSecondTargetInRealTime(t *testing.T) {
	testtier.SkipShort(t, "grades a slow service in real time")
	t.Parallel()
	svc := &wholeSecondService{delay: 30 * time.Millisecond}
	rep, err := suite.Check(context.Background(), suite.Config{Level: result.All}, svc.serve(t))
	require.NoError(t, err)
	t.Log("\n" + report.String(rep))
	assert.Equal(t, []string{"strict/config-range"}, failedIDs(rep), report.String(rep))
	notes := strings.Join(rep.Notes, "\n")
	assert.Contains(t, notes, "the target takes only windows in whole multiples of 1s")
	assert.Regexp(t, `the real-time window was raised from 1s to [1-9][0-9]*s:`, notes)
}

// capped refuses, as invalid, a limit above 20: a configuration the
// contract takes.
type capped struct{ contract.RateLimiterContract }

func (c capped) Configure(ctx context.Context, n int, w time.Duration) error {
	if n > 20 {
		return fmt.Errorf("%w: a limit of %d is more than 20", contract.ErrInvalidConfig, n)
	}
	return c.RateLimiterContract.Configure(ctx, n, w)
}

// A valid configuration the grader chose and the target refused is not a
// verdict of the spec that chose it (core/concurrent-4: inconclusive);
// strict/config-range, which grades the range, fails it.
func TestARefusedChoiceIsInconclusiveWhereConfigRangeFails(t *testing.T) {
	t.Parallel()
	target := suite.Target{Name: "capped at 20", Capabilities: contract.Capabilities{Clock: true, Configure: true, Remaining: true, Reset: true},
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := model.NewLimiter(env.Clock, env.MaxRequests, env.Window)
			return capped{lim}, nil, err
		}}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/concurrent-4", "strict/config-range"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	conc, configRange := rep.Results[0], rep.Results[1]
	assert.Equal(t, result.Inconclusive, conc.Status, conc.Message)
	assert.Contains(t, conc.Message, "Configure(25, 1m0s) was refused")
	assert.Contains(t, conc.Message, "strict/config-range grades which configurations a limiter must take")
	assert.Equal(t, result.Failed, configRange.Status, configRange.Message)
	assert.Contains(t, configRange.Message, "Configure(10000, 720h0m0s) returned an error")
}
