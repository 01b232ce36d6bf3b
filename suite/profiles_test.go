package suite_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// profileSpecs are the profiles and parameters the self-test grades.
var profileSpecs = []string{
	"fixed-window:align=epoch", "fixed-window:align=first-grid,count-denied=true,query=read", "fixed-window:align=first-hit",
	"sliding-counter", "sliding-counter:count-denied=true", "sliding-counter:align=first-grid,count-denied=true",
	"sliding-counter:admit=at-most,count-denied=true",
	"fixed-window:align=go-zero", "sliding-counter:align=go-zero,admit=at-most,count-denied=true",
	"gcra", "gcra:burst=2",
	"token-bucket:capacity=8", "token-bucket:refill=interval,capacity=3",
	"fixed-window:align=elastic,count-denied=true,query=read", "fixed-window:align=elastic-allowed",
	"gcra:burst=1,cost=debt", "token-bucket:cost=debt",
}

// Each profile's own model, graded against its profile, passes every spec
// that grades it, on the fake clock: the catalogue's rules are the
// profile's.
func TestProfileModelsPassTheirProfile(t *testing.T) {
	t.Parallel() // in memory
	for _, p := range append(slices.Clone(profileSpecs), "token-bucket:refill=interval,capacity=3,cost=debt,expire=idle,query=write") {
		t.Run(p, func(t *testing.T) {
			rep, err := suite.Check(context.Background(), suite.Config{Profile: p, ReportDir: t.TempDir()}, targets.ProfileModel(model.MustVariant(p)))
			require.NoError(t, err)
			for _, r := range rep.Results {
				assert.NotEqual(t, result.Failed, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
				assert.NotEqual(t, result.Errored, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
			}
			assert.Greater(t, rep.Count(result.Passed), 20, "most of the catalogue grades %s", p)
		})
	}
}

// A model that decides weighted requests whole, graded as one that runs
// into debt (cost=debt), fails the specs of weighted requests where they
// differ, with a wrong answer, and so does one that runs into debt graded
// as whole: the parameter is graded, and the specs ask the model what
// fits (strict/cost-never-fit: a cost above the burst is allowed into
// debt, refused whole).
func TestCostParameterIsGraded(t *testing.T) {
	t.Parallel() // in memory
	for _, c := range []struct{ impl, graded string }{
		{"gcra:burst=2", "gcra:burst=2,cost=debt"}, {"gcra:burst=2,cost=debt", "gcra:burst=2"},
		{"token-bucket:refill=interval", "token-bucket:refill=interval,cost=debt"}, {"token-bucket:cost=debt", "token-bucket"},
	} {
		t.Run(c.impl+" as "+c.graded, func(t *testing.T) {
			ids := []string{"strict/cost-all-or-nothing", "strict/cost-never-fit", "strict/cost-differential"}
			rep, err := suite.Check(context.Background(), suite.Config{Profile: c.graded, IDs: ids, ReportDir: t.TempDir()}, targets.ProfileModel(model.MustVariant(c.impl)))
			require.NoError(t, err)
			require.Len(t, rep.Results, len(ids))
			for _, r := range rep.Results {
				require.Equal(t, result.Failed, r.Status, "%s graded as %s must fail %s:\n%s", c.impl, c.graded, r.ID, r.Message)
				assert.Equal(t, result.KindWrongAnswer, r.Failure.Kind, r.Message)
			}
		})
	}
}

// invalidNeverFit answers a request whose cost can never fit under the
// configuration in force (a fresh user's full quota refuses it), or of
// cost 0, as invalid input (contract.ErrInvalidCost), as Symfony's
// limiters and Guava do, and every other as its limiter does.
type invalidNeverFit struct {
	contract.CostLimiter
	profile model.Variant
	mu      sync.Mutex
	n       int
	w       time.Duration
}

func (l *invalidNeverFit) Configure(ctx context.Context, n int, w time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.CostLimiter.Configure(ctx, n, w); err != nil {
		return err
	}
	l.n, l.w = n, w
	return nil
}

func (l *invalidNeverFit) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	l.mu.Lock()
	fresh, err := l.profile.New(l.n, l.w)
	l.mu.Unlock()
	if err != nil {
		return false, err
	}
	if fits, _ := model.AllowN(fresh, time.Unix(0, 0), "fresh", n); n == 0 || !fits && n > 0 {
		return false, fmt.Errorf("AllowRequestN(%q, %d): %w: it can never fit", user, n, contract.ErrInvalidCost)
	}
	return l.CostLimiter.AllowRequestN(ctx, user, n)
}

// Under every profile, a limiter that answers a cost that can never fit
// under the configuration in force (after a Configure too, and above a
// bucket's capacity below the limit), and a cost of 0, as invalid input
// passes every spec of weighted requests: the contract takes that answer
// as it takes a denial, and the answer changes nothing (a profile that
// counts denied requests counts none of it).
func TestNeverFitMayBeInvalidUnderEveryProfile(t *testing.T) {
	t.Parallel() // in memory
	for _, p := range append([]string{"sliding-log"}, profileSpecs...) {
		t.Run(p, func(t *testing.T) {
			v := model.MustVariant(p)
			m := targets.ProfileModel(v)
			target := m
			var mu sync.Mutex
			wrapped := map[contract.RateLimiterContract]*invalidNeverFit{} // the model's instances share one limiter
			target.New = func(ctx context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				lim, closer, err := m.New(ctx, env)
				if err != nil {
					return nil, nil, err
				}
				mu.Lock()
				defer mu.Unlock()
				if wrapped[lim] == nil {
					wrapped[lim] = &invalidNeverFit{CostLimiter: lim.(contract.CostLimiter), profile: v, n: env.MaxRequests, w: env.Window}
				}
				return wrapped[lim], closer, nil
			}
			var ids []string
			for _, s := range suite.Specs() {
				if strings.Contains(s.ID, "/cost-") {
					ids = append(ids, s.ID)
				}
			}
			rep, err := suite.Check(context.Background(), suite.Config{Profile: p, IDs: ids, ReportDir: t.TempDir()}, target)
			require.NoError(t, err)
			for _, r := range rep.Results {
				assert.Contains(t, []result.Status{result.Passed, result.Skipped}, r.Status, "%s under %s:\n%s", r.ID, p, r.Message)
			}
			r := rep.Results[slices.IndexFunc(rep.Results, func(r result.Result) bool { return r.ID == "strict/cost-differential" })]
			assert.Equal(t, result.Passed, r.Status, r.Message)
		})
	}
}

// racyProfile checks and adds in two steps, as a limiter without one
// atomic script does: concurrent requests pass the same check.
type racyProfile struct {
	mu    *sync.Mutex
	p     model.Profile
	clock fakeclock.Clock
}

func (r racyProfile) AllowRequest(_ context.Context, u string) (bool, error) {
	r.mu.Lock()
	left, err := r.p.Remaining(r.clock.Now(), u)
	r.mu.Unlock()
	if err != nil || left == 0 {
		return false, err
	}
	runtime.Gosched()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.Allow(r.clock.Now(), u)
	return true, nil // the check passed
}

func (r racyProfile) GetRemainingRequests(_ context.Context, u string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.Remaining(r.clock.Now(), u)
}

func (r racyProfile) Reset(_ context.Context, u string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.Reset(u)
}

func (r racyProfile) Configure(_ context.Context, n int, w time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.Configure(r.clock.Now(), n, w)
}

// The linearizability check under a profile can fail: a check-then-add
// GCRA lets more through at once than its burst.
func TestProfileLinearizabilityCatchesARace(t *testing.T) {
	t.Parallel() // in memory; in real time it mostly waits
	for _, clock := range []bool{true, false} {
		if !clock && testing.Short() {
			t.Log("-short: not graded in real time (make test grades it)")
			continue
		}
		caps := contract.All()
		caps.StoreInspection, caps.SharedStore, caps.Clock = false, false, clock
		tg := suite.Target{Name: "racy gcra", Capabilities: caps,
			New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
				p, err := model.MustVariant("gcra").New(env.MaxRequests, env.Window)
				return racyProfile{&sync.Mutex{}, p, env.Clock}, nil, err
			}}
		rep, err := suite.Check(context.Background(), suite.Config{Profile: "gcra", IDs: []string{"strict/linearizable"}, ReportDir: t.TempDir()}, tg)
		require.NoError(t, err)
		r := rep.Results[0]
		if !clock && r.Status == result.Inconclusive {
			t.Logf("inconclusive in real time on this machine: %s", r.Message)
			continue
		}
		assert.Equal(t, result.Failed, r.Status, "clock %v:\n%s", clock, r.Message)
	}
}
