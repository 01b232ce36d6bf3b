package honest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/adapters"
	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/honest"
	"github.com/rlconform/rlconform/internal/testtier"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/report"
	"github.com/rlconform/rlconform/result"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

var store *redisenv.Redis

func TestMain(m *testing.M) {
	// The parallel tests grade in real time: they mostly wait.
	testtier.Parallelism(3)
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
	caps.Clock, caps.Cost = clock, l.Cost
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
func passes(t *testing.T, rep *result.Report) {
	t.Helper()
	for _, r := range rep.Results {
		assert.NotContains(t, []result.Status{result.Failed, result.Errored}, r.Status, "%s:\n%s", r.ID, r.Message)
	}
	assert.NotEqual(t, result.NotConformant, rep.Verdict().Outcome, report.String(rep))
}

// TestEachPassesItsProfile grades every honest limiter with the whole
// catalogue against its own profile, with clock control: nothing fails.
// (go test -short leaves out robust/store-outage, which waits for seconds.)
func TestEachPassesItsProfile(t *testing.T) {
	for _, l := range honest.All() {
		t.Run(l.Name, func(t *testing.T) {
			cfg := suite.Config{Redis: store, Profile: l.Profile, ReportDir: t.TempDir()}
			if testing.Short() {
				cfg.IDs = allBut("robust/store-outage")
			}
			rep, err := suite.Check(context.Background(), cfg, target(l, true))
			require.NoError(t, err)
			passes(t, rep)
			assert.Equal(t, result.Conformant, rep.Verdict().Outcome, report.String(rep))
		})
	}
}

// TestIdentifyNamesEach: identify names each honest limiter's profile,
// alone (with the profiles that decide as it does on every history).
func TestIdentifyNamesEach(t *testing.T) {
	for _, l := range honest.All() {
		t.Run(l.Name, func(t *testing.T) {
			id, err := suite.Identify(context.Background(), suite.Config{Redis: store}, target(l, true))
			require.NoError(t, err)
			var b strings.Builder
			require.NoError(t, report.Identification(&b, id))
			t.Log("\n" + b.String())
			require.Len(t, id.Fits, 1, "one profile, or one group, fits")
			names := append([]string{id.Fits[0].Profile}, id.Fits[0].SameDecisions...)
			assert.Contains(t, names, model.MustVariant(l.Profile).String())
			assert.Empty(t, id.Fits[0].RemainingDiffers)
		})
	}
}

// TestSlidingCounterFailsTheBelowProfile: the two-window counter that
// admits while the estimate including the request is at most N fails the
// profile that admits while the estimate is below N, where the weighted
// count is a fraction.
func TestSlidingCounterFailsTheBelowProfile(t *testing.T) {
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: "sliding-counter:count-denied=true", IDs: []string{"strict/boundary-burst-epoch"}}, target(byName(t, "sliding-counter"), true))
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, result.Failed, rep.Results[0].Status, rep.Results[0].Message)
}

// TestSlidingCounterFailsTheEpochsGrid: the two-window counter whose
// windows time.Time.Truncate lays out, from Go's zero time, passes
// align=go-zero (TestEachPassesItsProfile) and fails align=epoch where a
// window of 30 days, 365 days or 100 years lies elsewhere on the two grids
// (mennanov/limiters' card once failed it there).
func TestSlidingCounterFailsTheEpochsGrid(t *testing.T) {
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: "sliding-counter:align=epoch,count-denied=true,admit=at-most", IDs: []string{"strict/config-range"}}, target(byName(t, "sliding-counter"), true))
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, result.Failed, rep.Results[0].Status, rep.Results[0].Message)
}

// TestEachPassesOnceFailedSpecsEveryTime runs the spec that once failed
// each limiter many times over, as a flaky failure showed: it passes
// every time, with clock control, and the real-time specs without it.
// make test runs each a few times, the full tier as many as it takes.
func TestEachPassesOnceFailedSpecsEveryTime(t *testing.T) {
	for _, c := range []struct {
		name, id string
		runs     int
		clock    bool
	}{
		{"zcard-log", "strict/clock-step-back", testtier.Runs(20, testtier.Quick(5, 2)), true},
		{"exact-log", "robust/invalid-config", testtier.Runs(20, testtier.Quick(5, 2)), true},
		{"exact-log", "robust/invalid-config", 1, false},
		{"pacer", "robust/invalid-config", testtier.Runs(20, testtier.Quick(5, 2)), true},
		{"fixed-window", "robust/key-hygiene", testtier.Runs(50, testtier.Quick(10, 3)), true},
		{"fixed-window", "robust/key-hygiene", testtier.Runs(3, 1), false},
	} {
		l := byName(t, c.name)
		t.Run(fmt.Sprintf("%s %s clock %v", c.name, c.id, c.clock), func(t *testing.T) {
			if !c.clock {
				testtier.SkipShort(t, "grades in real time")
			}
			for range c.runs {
				rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, IDs: []string{c.id}}, target(l, c.clock))
				require.NoError(t, err)
				require.Len(t, rep.Results, 1)
				r := rep.Results[0]
				if r.Status == result.Inconclusive {
					t.Logf("inconclusive in real time on this machine (never a pass): %s", r.Message)
					continue
				}
				require.Equal(t, result.Passed, r.Status, r.Message)
			}
		})
	}
}

// allBut lists the catalogue's spec ids but those given.
func allBut(ids ...string) []string {
	var out []string
	for _, s := range suite.Specs() {
		if !slices.Contains(ids, s.ID) {
			out = append(out, s.ID)
		}
	}
	return out
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

// hashed starts two instances of the hashed-id service on a prefix of its
// own in the package's Redis, and returns them as the command line grades
// a remote limiter with --store-url and --store-prefix: keys are inspected
// under that prefix, which every spec shares.
func hashed(t *testing.T, clock bool) (suite.Target, suite.Config) {
	t.Helper()
	return hashedOn(t, store, clock)
}

// bounded is a client of red for a service deployed as it should be: a
// store that is down or hangs is a 503 within the store timeout
// robust/store-outage grades (1s), not after go-redis's defaults (five
// dials 100ms apart, three retries, reads of 3s). A Redis given by a URL
// it cannot parse (a cluster's nodes) keeps red's client: the spec, which
// stops only a Redis the test started, does not grade it.
func bounded(t *testing.T, red *redisenv.Redis) redis.UniversalClient {
	opts, err := redis.ParseURL(red.URL)
	if err != nil {
		return red.Client
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled = -1, 1, true
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	return client
}

// hashedOn is hashed on the Redis red.
func hashedOn(t *testing.T, red *redisenv.Redis, clock bool) (suite.Target, suite.Config) {
	t.Helper()
	prefix := fmt.Sprintf("rlc-hashed:%d:", time.Now().UnixNano())
	client := bounded(t, red)
	var urls []string
	for range 2 {
		h, err := honest.NewHashedService(client, prefix, clock)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	target, err := targets.Remote(context.Background(), urls, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, clock, target.Capabilities.Clock)
	target.Capabilities.StoreInspection = true
	target.NeedsRedis = true // its Redis is ours: the store-outage spec may stop it
	return target, suite.Config{Redis: red, StorePrefix: prefix, ReportDir: t.TempDir()}
}

// TestHashedServicePasses grades the service that hashes ids into its
// keys with the whole catalogue, with clock control and in real time:
// nothing fails. It runs beside the other parallel tests, none of which
// uses the package's Redis (robust/store-outage stops it); in real time on
// a Redis of its own.
func TestHashedServicePasses(t *testing.T) {
	t.Parallel()
	for _, clock := range []bool{true, false} {
		t.Run(fmt.Sprintf("clock %v", clock), func(t *testing.T) {
			red := store
			if !clock {
				testtier.SkipShort(t, "grades in real time")
				t.Parallel()
				var err error
				red, err = redisenv.Obtain(context.Background())
				require.NoError(t, err)
				t.Cleanup(func() { red.Close() })
			}
			target, cfg := hashedOn(t, red, clock)
			if testing.Short() {
				cfg.IDs = allBut("robust/store-outage") // it waits for seconds
			}
			rep, err := suite.Check(context.Background(), cfg, target)
			require.NoError(t, err)
			passes(t, rep)
			t.Log("\n" + report.String(rep))
		})
	}
}

// TestHashedServiceKeyHygieneEveryTime: robust/key-hygiene alone, and
// after strict/config-range has left keys with a TTL of 100 years under
// the shared prefix, passes every time: it judges only the keys that
// appeared during it. make test runs each a few times, the full tier as
// many as it takes.
func TestHashedServiceKeyHygieneEveryTime(t *testing.T) {
	for _, c := range []struct {
		ids   []string
		clock bool
		runs  int
	}{
		{[]string{"robust/key-hygiene"}, true, testtier.Runs(10, testtier.Quick(3, 1))},
		{[]string{"robust/key-hygiene"}, false, testtier.Runs(3, 1)},
		{[]string{"strict/config-range", "robust/key-hygiene"}, true, testtier.Runs(3, 1)},
		{[]string{"strict/config-range", "robust/key-hygiene"}, false, 1},
	} {
		t.Run(fmt.Sprintf("%v clock %v", c.ids, c.clock), func(t *testing.T) {
			if !c.clock {
				testtier.SkipShort(t, "grades in real time")
			}
			target, cfg := hashed(t, c.clock)
			cfg.IDs = c.ids
			for range c.runs {
				rep, err := suite.Check(context.Background(), cfg, target)
				require.NoError(t, err)
				for _, r := range rep.Results {
					if r.Status == result.Inconclusive {
						t.Logf("inconclusive in real time on this machine (never a pass): %s", r.Message)
						continue
					}
					require.Equal(t, result.Passed, r.Status, r.Message)
				}
			}
		})
	}
}

// gcraEndpoint serves an API behind the GCRA middleware, n per w, keyed
// by X-User, and returns it as an endpoint graded against the profile
// gcra with that policy.
func gcraEndpoint(t *testing.T, n int, w time.Duration) (suite.Target, suite.Config) {
	t.Helper()
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mw := honest.GCRAMiddleware(n, w, func(r *http.Request) string { return r.Header.Get("X-User") })
	srv := httptest.NewServer(mw(api))
	t.Cleanup(srv.Close)
	identity, err := adapters.ParseIdentity("header:X-User")
	require.NoError(t, err)
	policy := adapters.Policy{Limit: n, Window: w}
	target, _, _, err := targets.Endpoint(context.Background(), []string{srv.URL}, targets.EndpointOptions{
		EndpointOptions: adapters.EndpointOptions{Identity: identity, LimitedStatus: http.StatusTooManyRequests, Timeout: 5 * time.Second},
		Policy:          policy,
	})
	require.NoError(t, err)
	return target, suite.Config{Profile: honest.GCRAProfile, Limit: policy.Limit, RealTimeWindow: policy.Window, ReportDir: t.TempDir()}
}

// TestGCRAMiddlewarePasses grades the GCRA middleware, whose
// X-RateLimit-Reset says when the whole quota is back, as an endpoint
// against its profile: at 5 per second every spec that grades an endpoint
// passes; at 4 per 4 seconds, where the whole quota comes back seconds
// after the next request may go, http/ratelimit-fields passes every time
// (a few times in make test, as many as it takes in the full tier).
func TestGCRAMiddlewarePasses(t *testing.T) {
	testtier.SkipShort(t, "grades an endpoint in real time")
	t.Parallel() // in memory, in real time: it mostly waits
	target, cfg := gcraEndpoint(t, 5, time.Second)
	rep, err := suite.Check(context.Background(), cfg, target)
	require.NoError(t, err)
	passes(t, rep)
	t.Log("\n" + report.String(rep))
	r, ok := resultOf(rep, "http/ratelimit-fields")
	require.True(t, ok)
	require.Equal(t, result.Passed, r.Status, r.Message)

	target, cfg = gcraEndpoint(t, 4, 4*time.Second)
	cfg.IDs = []string{"http/ratelimit-fields"}
	for range testtier.Runs(3, 1) {
		rep, err := suite.Check(context.Background(), cfg, target)
		require.NoError(t, err)
		require.Equal(t, result.Passed, rep.Results[0].Status, rep.Results[0].Message)
	}
}

func resultOf(rep *result.Report, id string) (result.Result, bool) {
	for _, r := range rep.Results {
		if r.ID == id {
			return r, true
		}
	}
	return result.Result{}, false
}

// costIDs are the ids of the specs that grade weighted requests.
func costIDs() []string {
	var out []string
	for _, s := range suite.Specs() {
		if strings.Contains(s.ID, "cost") {
			out = append(out, s.ID)
		}
	}
	return out
}

// passesEveryCostSpec asserts that every spec grading weighted requests
// ran and passed: none skipped, none inconclusive.
func passesEveryCostSpec(t *testing.T, rep *result.Report) {
	t.Helper()
	ids := costIDs()
	require.NotEmpty(t, ids)
	for _, id := range ids {
		r, ok := resultOf(rep, id)
		if assert.True(t, ok, "%s was not run", id) {
			assert.Equal(t, result.Passed, r.Status, "%s:\n%s", id, r.Message)
		}
	}
}

// TestCostLogPassesEveryCostSpec: the logs that answer a cost that can
// never fit (above the limit in force, after a Configure too), and with
// cost-log-positive a cost of 0, as invalid input (ErrInvalidCost), as
// the contract allows, pass every spec of weighted requests, on the fake
// clock: strict/cost-differential once failed them where a lowered limit
// left a drawn cost too large to ever fit, and on a cost of 0 (its
// schedules are seeded: a few seeds).
//
// Without clock control (not under -short), graded in real time on the
// Redis server's clock, neither fails a spec.
func TestCostLogPassesEveryCostSpec(t *testing.T) {
	for _, name := range []string{"cost-log", "cost-log-positive"} {
		t.Run(name, func(t *testing.T) {
			l := byName(t, name)
			for seed := range uint64(3) {
				rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, IDs: costIDs(), Seed: seed + 1, ReportDir: t.TempDir()}, target(l, true))
				require.NoError(t, err)
				passesEveryCostSpec(t, rep)
			}
		})
		t.Run(name+" in real time", func(t *testing.T) {
			testtier.SkipShort(t, "grades in real time")
			l := byName(t, name)
			rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, IDs: costIDs(), ReportDir: t.TempDir()}, target(l, false))
			require.NoError(t, err)
			passes(t, rep)
			t.Log("\n" + report.String(rep))
		})
	}
}

// TestCostLogPassesEveryCostSpecOverHTTP grades cost-log-positive served
// over protocol v1, where ErrInvalidCost is a 400 that the client maps
// back to it: every spec of weighted requests passes.
func TestCostLogPassesEveryCostSpecOverHTTP(t *testing.T) {
	prefix := fmt.Sprintf("rlc-costlog:%d:", time.Now().UnixNano())
	var urls []string
	for range 2 {
		fake := fakeclock.New(time.Now())
		lim, err := honest.NewPositiveCostLog(honest.Store{Redis: store.Client, Clock: fake, Prefix: prefix, MaxRequests: 5, Window: time.Minute})
		require.NoError(t, err)
		srv := httptest.NewServer(adapters.Handler(lim, fake))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	target, err := targets.Remote(context.Background(), urls, 5*time.Second)
	require.NoError(t, err)
	require.True(t, target.Capabilities.Cost && target.Capabilities.Clock, "%+v", target.Capabilities)
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, StorePrefix: prefix, IDs: costIDs(), ReportDir: t.TempDir()}, target)
	require.NoError(t, err)
	passesEveryCostSpec(t, rep)
}

// TestTTLWindowPassesTheCostSpecsInRealTime grades the TTL window
// (rate-limiter-flexible's design) without clock control, where a request
// of cost 0 opens a window: strict/cost-differential once failed it for
// that (its card, one grading in two), and now passes every time, as the
// other cost specs do.
func TestTTLWindowPassesTheCostSpecsInRealTime(t *testing.T) {
	testtier.SkipShort(t, "grades in real time")
	l := honest.Limiter{Name: "ttl-window", Profile: honest.TTLWindowProfile, Cost: true, KeyOf: func(prefix, userID string) string { return prefix + userID },
		New: func(s honest.Store) (contract.RateLimiterContract, error) { return honest.NewTTLWindow(s) }}
	for range testtier.Runs(8, 3) {
		rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, IDs: []string{"strict/cost-differential", "strict/cost-zero"}, ReportDir: t.TempDir()}, target(l, false))
		require.NoError(t, err)
		passes(t, rep)
	}
}

// TestPacerPassesInRealTime grades the pacer (gcra:burst=1, a fresh user
// gets one request, not N) with the whole catalogue without clock
// control, on the machine's clock: no spec fails it. With clock control
// TestEachPassesItsProfile grades it. robust/invalid-config once failed
// it, assuming that a fresh user gets N at once.
func TestPacerPassesInRealTime(t *testing.T) {
	testtier.SkipShort(t, "grades in real time")
	l := byName(t, "pacer")
	rep, err := suite.Check(context.Background(), suite.Config{Redis: store, Profile: l.Profile, ReportDir: t.TempDir()}, target(l, false))
	require.NoError(t, err)
	passes(t, rep)
	t.Log("\n" + report.String(rep))
}
