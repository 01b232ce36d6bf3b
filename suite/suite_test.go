package suite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/mutants"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	rlcginkgo "github.com/rlconform/rlconform/suite/ginkgo"
	"github.com/rlconform/rlconform/targets"
)

// TestConformance grades the reference limiter (real Redis, fake clock) and
// the model with the whole catalogue: both must pass every spec.
//
// To grade a remote limiter instead, name it in the environment:
//
//	RLCONFORM_TARGET=http://localhost:8081,http://localhost:8082 \
//	RLCONFORM_STORE_URL=redis://localhost:6379 RLCONFORM_STORE_PREFIX=rl: \
//	go test ./suite
func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	if urls := os.Getenv("RLCONFORM_TARGET"); urls != "" {
		registerRemote(t, strings.Split(urls, ","))
	} else {
		rlcginkgo.Register(suite.Config{}, targets.Reference(), targets.Model())
	}
	// Each failure's message once more, at the very end: a CI log that
	// keeps only the end of the output still says what failed and why.
	ReportAfterSuite("the failures, last", func(r Report) {
		for _, s := range r.SpecReports {
			if s.Failed() {
				fmt.Fprintf(os.Stderr, "FAILED: %s\n%s\n", s.FullText(), s.FailureMessage())
			}
		}
	})
	RunSpecs(t, "rlconform conformance")
}

func registerRemote(t *testing.T, urls []string) {
	ctx := context.Background()
	target, err := targets.Remote(ctx, urls, 5*time.Second)
	if err != nil {
		t.Fatalf("RLCONFORM_TARGET: %v", err)
	}
	cfg := suite.Config{}
	if store := os.Getenv("RLCONFORM_STORE_URL"); store != "" {
		red, err := redisenv.FromURL(ctx, store)
		if err != nil {
			t.Fatalf("RLCONFORM_STORE_URL: %v", err)
		}
		t.Cleanup(func() { red.Close() })
		cfg.Redis, cfg.StorePrefix = red, os.Getenv("RLCONFORM_STORE_PREFIX")
		target.Capabilities.StoreInspection = true
	}
	rlcginkgo.Register(cfg, target)
}

// TestRunEntryPoint is the fstest-style form: one subtest per spec.
func TestRunEntryPoint(t *testing.T) {
	suite.Run(t, suite.Config{Level: result.Strict}, targets.Model())
}

// TestRunHonoursExpectFail: a known failure listed in ExpectFail passes the
// go test form, as it does the command line.
func TestRunHonoursExpectFail(t *testing.T) {
	caps := contract.All()
	broken := suite.Target{Name: "reset-pattern", Capabilities: caps, NeedsRedis: true,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			lim, err := mutants.ResetByPattern(mutants.Store{Redis: env.Redis, Clock: env.Clock, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
			return lim, nil, err
		}}
	suite.Run(t, suite.Config{IDs: []string{"core/reset", "core/multi-user"}, ExpectFail: []string{"core/reset"}}, broken)
}

// failingTail wraps a limiter so that every call after the first ok ones
// fails with a store error, doing nothing.
type failingTail struct {
	contract.RateLimiterContract
	calls *atomic.Int64
	ok    int64
}

func (f failingTail) fail() bool { return f.calls.Add(1) > f.ok }

func (f failingTail) AllowRequest(ctx context.Context, u string) (bool, error) {
	if f.fail() {
		return false, fmt.Errorf("%w: injected", contract.ErrStore)
	}
	return f.RateLimiterContract.AllowRequest(ctx, u)
}

func (f failingTail) GetRemainingRequests(ctx context.Context, u string) (int, error) {
	if f.fail() {
		return 0, fmt.Errorf("%w: injected", contract.ErrStore)
	}
	return f.RateLimiterContract.GetRemainingRequests(ctx, u)
}

func (f failingTail) Reset(ctx context.Context, u string) error {
	if f.fail() {
		return fmt.Errorf("%w: injected", contract.ErrStore)
	}
	return f.RateLimiterContract.Reset(ctx, u)
}

// TestLinearizableToleratesUnknownOutcomes: calls that fail late in a
// history (unknown outcomes, after every other call returned) are not a
// verdict against a correct limiter.
func TestLinearizableToleratesUnknownOutcomes(t *testing.T) {
	model := targets.Model()
	target := model
	target.Name = "model failing its last calls"
	calls := new(atomic.Int64) // one count over the spec's instances
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := model.New(ctx, env)
		return failingTail{lim, calls, 475}, closer, err
	}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/linearizable"}}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, result.Passed, rep.Results[0].Status, rep.Results[0].Message)
}

// TestGradersStoreDyingIsAFaultNotAVerdict: when the Redis the grader
// started stops mid-run, the reference is not graded NOT CONFORMANT: the
// spec that saw it is errored, the run aborted and undecided.
func TestGradersStoreDyingIsAFaultNotAVerdict(t *testing.T) {
	testtier.SkipShort(t, "waits out a stopped Redis")
	t.Parallel() // a Redis of its own: it waits on the stopped one
	ctx := context.Background()
	red, err := redisenv.Start(ctx)
	require.NoError(t, err)
	defer red.Close()
	ref := targets.Reference()
	target := ref
	var specs atomic.Int64
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		if env.Instance == 0 && specs.Add(1) == 3 {
			require.NoError(t, red.Server.Stop())
		}
		return ref.New(ctx, env)
	}
	rep, err := suite.Check(ctx, suite.Config{Redis: red, Level: result.Core}, target)
	require.NoError(t, err)
	v := rep.Verdict()
	assert.Equal(t, result.Undecided, v.Outcome, report.String(rep))
	assert.Zero(t, rep.Count(result.Failed), report.String(rep))
	assert.Equal(t, 1, rep.Count(result.Errored))
	assert.Contains(t, rep.Aborted, "the grader's Redis")
	assert.Positive(t, rep.Count(result.NotRun), "the specs after it are not run")
}

// TestInterruptEndsTheRunWithAReport: a cancelled context stops the run
// between specs; what finished is kept, the rest is interrupted.
func TestInterruptEndsTheRunWithAReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := suite.Config{Level: result.Core, Progress: func(r result.Result) {
		if r.ID == "core/remaining" {
			cancel()
		}
	}}
	rep, err := suite.Check(ctx, cfg, targets.Model())
	require.NoError(t, err)
	assert.Equal(t, result.Undecided, rep.Verdict().Outcome)
	assert.Contains(t, rep.Aborted, "interrupted")
	assert.Positive(t, rep.Count(result.Passed))
	assert.Positive(t, rep.Count(result.Interrupted))
	assert.Zero(t, rep.Count(result.Failed))
}

// hostile wraps a limiter with misbehaviour that must never panic the
// grader: a Configure that breaks, calls that all fail, a limiter that
// panics.
type hostile struct {
	contract.RateLimiterContract
	calls *atomic.Int64
	mode  string
}

func (h hostile) Configure(ctx context.Context, n int, w time.Duration) error {
	if h.mode == "configure-breaks" && h.calls.Add(1) > 3 {
		return errors.New("configure broke")
	}
	return h.RateLimiterContract.Configure(ctx, n, w)
}

func (h hostile) AllowRequest(ctx context.Context, u string) (bool, error) {
	if err := h.misbehave(); err != nil {
		return false, err
	}
	return h.RateLimiterContract.AllowRequest(ctx, u)
}

func (h hostile) AllowRequestN(ctx context.Context, u string, n int) (bool, error) {
	if err := h.misbehave(); err != nil {
		return false, err
	}
	return h.RateLimiterContract.(contract.CostLimiter).AllowRequestN(ctx, u, n)
}

// misbehave is what a request meets: an error, a panic, or nothing.
func (h hostile) misbehave() error {
	switch h.mode {
	case "all-fail":
		return errors.New("everything fails")
	case "panics":
		if h.calls.Add(1) > 10 {
			panic("the limiter panicked")
		}
	}
	return nil
}

func TestNoTargetBehaviourPanicsTheGrader(t *testing.T) {
	for _, mode := range []string{"configure-breaks", "all-fail", "panics"} {
		t.Run(mode, func(t *testing.T) {
			m := targets.Model()
			target := m
			target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				lim, closer, err := m.New(ctx, env)
				return hostile{lim, new(atomic.Int64), mode}, closer, err
			}
			rep, err := suite.Check(context.Background(), suite.Config{SpecTimeout: 10 * time.Second}, target)
			require.NoError(t, err)
			assert.Equal(t, result.NotConformant, rep.Verdict().Outcome)
			for _, r := range rep.Results {
				assert.NotEqual(t, result.Errored, r.Status, "%s: a target's misbehaviour is a failure, never a fault of ours:\n%s", r.ID, r.Message)
			}
		})
	}
}

// TestContractCitesEverySpec: the contract's doc names every spec that
// grades a rule, and only specs that exist.
func TestContractCitesEverySpec(t *testing.T) {
	raw, err := os.ReadFile("../contract/contract.go")
	require.NoError(t, err)
	cited := map[string]bool{}
	for _, id := range regexp.MustCompile(`\b(?:core|strict|robust|http)/[a-z0-9-]+[a-z0-9]`).FindAllString(string(raw), -1) {
		cited[id] = true
	}
	known := map[string]bool{}
	for _, s := range suite.Specs() {
		known[s.ID] = true
		assert.True(t, cited[s.ID], "contract.go does not cite %s", s.ID)
	}
	for id := range cited {
		assert.True(t, known[id], "contract.go cites %s, which is not in the catalogue", id)
	}
}

// TestSharedRedisIsLeftAsFound: on a Redis the run did not start, the run
// never scans the whole keyspace when the target names its keys, removes
// every key it wrote (by name, or in one sweep of its prefix at the end),
// and touches no other key.
func TestSharedRedisIsLeftAsFound(t *testing.T) {
	ctx := context.Background()
	owned, err := redisenv.Start(ctx)
	require.NoError(t, err)
	defer owned.Close()
	shared, err := redisenv.FromURL(ctx, owned.URL) // the same server, as REDIS_URL would give it
	require.NoError(t, err)
	defer shared.Close()
	for i := range 500 {
		require.NoError(t, owned.Client.Set(ctx, fmt.Sprintf("app:%d", i), "x", 0).Err())
	}
	scans := func() int64 {
		stats, err := owned.Client.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		m := regexp.MustCompile(`cmdstat_scan:calls=(\d+)`).FindStringSubmatch(stats)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	byName := targets.Reference()
	noNames := byName
	noNames.KeyOf = nil
	for _, tc := range []struct {
		target   suite.Target
		maxScans int64
	}{{byName, 0}, {noNames, 10}} {
		before := scans()
		rep, err := suite.Check(ctx, suite.Config{Redis: shared, Level: result.All}, tc.target)
		require.NoError(t, err)
		assert.Equal(t, result.Conformant, rep.Verdict().Outcome, report.String(rep))
		assert.LessOrEqual(t, scans()-before, tc.maxScans, "SCAN walks every key of a shared Redis: KeyOf %v", tc.target.KeyOf != nil)
		assert.Empty(t, rep.Notes)
		left, err := owned.Client.Keys(ctx, "rlc:*").Result()
		require.NoError(t, err)
		assert.Empty(t, left, "every key the run wrote is removed")
		n, err := owned.Client.DBSize(ctx).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 500, n, "the unrelated keys are untouched")
	}
}

// unitOnly hides a limiter's AllowRequestN.
type unitOnly struct{ contract.RateLimiterContract }

// A target that declares Cost and makes limiters without AllowRequestN is
// wrong about itself, not a wrong limiter: the cost specs end as faults
// that say so (exit 2), and every other spec grades it as before.
func TestCostDeclaredButMissingIsAFault(t *testing.T) {
	m := targets.Model()
	target := m
	target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
		lim, closer, err := m.New(ctx, env)
		return unitOnly{lim}, closer, err
	}
	rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"core/", "strict/cost-zero", "robust/cost-negative"}}, target)
	require.NoError(t, err)
	for _, r := range rep.Results {
		if strings.Contains(r.ID, "cost") {
			assert.Equal(t, result.Errored, r.Status, r.ID)
			assert.Contains(t, r.Message, "does not implement contract.CostLimiter", r.ID)
			continue
		}
		assert.Equal(t, result.Passed, r.Status, "%s:\n%s", r.ID, r.Message)
	}
	assert.Equal(t, result.Undecided, rep.Verdict().Outcome, "a fault is no verdict on the limiter")
}

// zeroCost answers a request of cost 0 with err, and every other as its
// limiter does.
type zeroCost struct {
	contract.CostLimiter
	err error
}

func (z zeroCost) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	if n == 0 {
		return false, z.err
	}
	return z.CostLimiter.AllowRequestN(ctx, user, n)
}

// A cost of 0 refused as invalid input (Guava's tryAcquire(0) throws)
// consumes nothing, and passes strict/cost-zero; any other error fails it.
func TestCostZeroMayBeInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want result.Status
	}{
		"ErrInvalidCost": {fmt.Errorf("tryAcquire(0): %w", contract.ErrInvalidCost), result.Passed},
		"another error":  {errors.New("script error"), result.Failed},
	} {
		t.Run(name, func(t *testing.T) {
			m := targets.Model()
			target := m
			target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				lim, closer, err := m.New(ctx, env)
				if err != nil {
					return nil, nil, err
				}
				return zeroCost{lim.(contract.CostLimiter), tc.err}, closer, nil
			}
			rep, err := suite.Check(context.Background(), suite.Config{IDs: []string{"strict/cost-zero"}}, target)
			require.NoError(t, err)
			require.Len(t, rep.Results, 1)
			assert.Equal(t, tc.want, rep.Results[0].Status, rep.Results[0].Message)
		})
	}
}
