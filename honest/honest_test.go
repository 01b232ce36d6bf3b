package honest_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/honest"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/suite"
)

var store *redisenv.Redis

func TestMain(m *testing.M) {
	r, err := redisenv.Obtain(context.Background())
	if err != nil {
		println("honest: " + err.Error())
		os.Exit(1)
	}
	store = r
	code := m.Run()
	r.Close()
	os.Exit(code)
}

// target is an honest limiter as the suite grades it: on the suite's fake
// clock, or without clock control on the Redis server's clock.
func target(l honest.Limiter, clock bool) suite.Target {
	caps := contract.All()
	caps.Clock = clock
	return suite.Target{Name: l.Name, Capabilities: caps, NeedsRedis: true, KeyOf: l.KeyOf,
		New: func(_ context.Context, env suite.Env) (contract.RateLimiterContract, func() error, error) {
			var c fakeclock.Clock // nil: the server's TIME
			if clock {
				c = env.Clock
			}
			lim, err := l.New(honest.Store{Redis: env.Redis, Clock: c, Prefix: env.KeyPrefix, MaxRequests: env.MaxRequests, Window: env.Window})
			return lim, nil, err
		}}
}

// passes asserts that no spec of rep failed or errored.
func passes(t *testing.T, rep *suite.Report) {
	t.Helper()
	for _, r := range rep.Results {
		assert.NotContains(t, []suite.Status{suite.Failed, suite.Errored}, r.Status, "%s:\n%s", r.ID, r.Message)
	}
	assert.NotEqual(t, suite.NotConformant, rep.Verdict().Outcome, report.String(rep))
}

// TestEachPassesItsProfile grades every honest limiter with the whole
// catalogue against its own profile, with clock control: nothing fails.
func TestEachPassesItsProfile(t *testing.T) {
	for _, l := range honest.All() {
		t.Run(l.Name, func(t *testing.T) {
			rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, ReportDir: t.TempDir()}, target(l, true))
			require.NoError(t, err)
			passes(t, rep)
			assert.Equal(t, suite.Conformant, rep.Verdict().Outcome, report.String(rep))
		})
	}
}

// TestEachPassesOnceFailedSpecsEveryTime runs the spec that once failed
// each limiter many times over, as a flaky failure showed: it passes
// every time, with clock control, and the real-time specs without it.
func TestEachPassesOnceFailedSpecsEveryTime(t *testing.T) {
	for _, c := range []struct {
		name, id string
		runs     int
		clock    bool
	}{
		{"zcard-log", "strict/clock-step-back", 20, true},
		{"exact-log", "robust/invalid-config", 20, true},
		{"exact-log", "robust/invalid-config", 1, false},
	} {
		l := byName(t, c.name)
		t.Run(c.name+" "+c.id, func(t *testing.T) {
			for range c.runs {
				rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, IDs: []string{c.id}}, target(l, c.clock))
				require.NoError(t, err)
				require.Len(t, rep.Results, 1)
				r := rep.Results[0]
				if r.Status == suite.Inconclusive {
					t.Logf("inconclusive in real time on this machine (never a pass): %s", r.Message)
					continue
				}
				require.Equal(t, suite.Passed, r.Status, r.Message)
			}
		})
	}
}

func byName(t *testing.T, name string) honest.Limiter {
	for _, l := range honest.All() {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no honest limiter %q", name)
	return honest.Limiter{}
}
