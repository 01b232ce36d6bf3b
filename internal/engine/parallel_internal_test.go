package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/result"
)

// gauge counts the spec bodies running at once and the most seen.
type gauge struct {
	running, most atomic.Int32
}

func (g *gauge) enter() {
	n := g.running.Add(1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.running.Add(-1) }

// waitFor polls, up to a deadline, until cond holds; it reports whether it
// did.
func waitFor(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// endpointLike is a real-time target with a fixed policy and a Request,
// as an --endpoint is: its specs may run side by side.
func endpointLike() Target {
	request := func(context.Context, int, string) (HTTPAnswer, error) { return HTTPAnswer{Allowed: true}, nil }
	return Target{Name: "ep", New: idleTarget, Request: request}
}

// specs is n specs whose bodies enter g, run body, and leave.
func gaugedSpecs(n int, g *gauge, body func(i int, h *Harness)) Catalogue {
	var cat Catalogue
	for i := range n {
		cat = append(cat, Spec{ID: fmt.Sprintf("core/s%02d", i), Level: result.Core, Run: func(h *Harness) {
			g.enter()
			defer g.leave()
			body(i, h)
		}})
	}
	return cat
}

func ids(rep *result.Report) []string {
	var out []string
	for _, r := range rep.Results {
		out = append(out, r.ID)
	}
	return out
}

// With Parallel 1 an endpoint's specs run one at a time, as always.
func TestParallelOneRunsSpecsOneAtATime(t *testing.T) {
	t.Parallel()
	var g gauge
	cat := gaugedSpecs(5, &g, func(_ int, _ *Harness) {
		// Long enough that a second spec begun beside it would be seen.
		waitFor(func() bool { return g.running.Load() > 1 }, 50*time.Millisecond)
	})
	rep, err := cat.Check(context.Background(), Config{Parallel: 1}, endpointLike())
	require.NoError(t, err)
	assert.Equal(t, int32(1), g.most.Load(), "specs ran side by side")
	assert.Equal(t, ids(&result.Report{Results: cat.results()}), ids(rep))
	for _, n := range rep.Notes {
		assert.NotContains(t, n, "side by side")
	}
}

// results is the catalogue as results, in its order.
func (cat Catalogue) results() []result.Result {
	var out []result.Result
	for _, s := range cat {
		out = append(out, result.Result{ID: s.ID})
	}
	return out
}

// Side by side, an endpoint's specs overlap after the first, and their
// results come out in catalogue order though they end in the reverse.
func TestSideBySideResultsAreInCatalogueOrder(t *testing.T) {
	t.Parallel()
	var g gauge
	var ended sync.Map // spec index → true once it ended
	const n = 5
	cat := gaugedSpecs(n, &g, func(i int, h *Harness) {
		if i == 0 {
			return // the first runs alone: it measures the margin
		}
		// All four begin, then each ends only after every later one: the
		// last ends first.
		waitFor(func() bool { return g.most.Load() >= 4 }, 20*time.Second)
		waitFor(func() bool {
			for j := i + 1; j < n; j++ {
				if _, ok := ended.Load(j); !ok {
					return false
				}
			}
			return true
		}, 20*time.Second)
		ended.Store(i, true)
	})
	rep, err := cat.Check(context.Background(), Config{Parallel: 4}, endpointLike())
	require.NoError(t, err)
	assert.Equal(t, int32(4), g.most.Load(), "specs side by side at most")
	assert.Equal(t, ids(&result.Report{Results: cat.results()}), ids(rep))
	for _, r := range rep.Results {
		assert.Equal(t, result.Passed, r.Status, r.ID+": "+r.Message)
	}
	assert.Contains(t, fmt.Sprint(rep.Notes), "up to 4 specs ran side by side after the first (--parallel 4")
}

// A target with Configure runs its specs one at a time whatever Parallel
// says: each spec configures it as it starts, and a limiter may forget
// every user when configured, even alike. One without Configure runs them
// side by side in real time, but never with the fake clock nor one limit
// for every request.
func TestATargetWithConfigureRunsOneSpecAtATime(t *testing.T) {
	t.Parallel()
	var g gauge
	cat := gaugedSpecs(4, &g, func(_ int, _ *Harness) {
		// Long enough that a second spec begun beside it would be seen.
		waitFor(func() bool { return g.running.Load() > 1 }, 50*time.Millisecond)
	})
	target := Target{Name: "url", Addresses: []string{"http://x"}, Capabilities: contract.Capabilities{Configure: true}, New: idleTarget}
	rep, err := cat.Check(context.Background(), Config{Parallel: 4}, target)
	require.NoError(t, err)
	assert.Equal(t, int32(1), g.most.Load(), "specs ran side by side")
	assert.Len(t, rep.Results, 4)

	r := &runner{cfg: Config{Parallel: 4}}
	assert.Equal(t, 1, r.lanes(target, 4), "Configure")
	assert.Equal(t, 1, r.lanes(Target{New: idleTarget, Capabilities: contract.Capabilities{Configure: true}}, 4), "in process, Configure")
	target.Lanes = 3
	assert.Equal(t, 3, r.lanes(target, 4), "Configure, on lanes of its own")
	shared := endpointLike()
	shared.SharedLimit = true
	assert.Equal(t, 1, r.lanes(shared, 4), "--identity none")
	clock := endpointLike()
	clock.Capabilities.Clock = true
	assert.Equal(t, 1, r.lanes(clock, 4), "fake clock")
	assert.Equal(t, 4, r.lanes(endpointLike(), 4), "an endpoint")
}

// With Parallel 0 the lanes are what the pacing leaves room for: none for
// 5/1s at 50 requests a second, fifteen for 20/1m (the burst of 48 four
// times in 3000 requests a minute); with no pacing, defaultLanes.
func TestDefaultLanesFollowThePacing(t *testing.T) {
	ep := endpointLike()
	ep.MaxRPS = 50
	r := &runner{cfg: Config{Limit: 5, RealTimeWindow: time.Second}}
	assert.Equal(t, 1, r.lanes(ep, 30))
	r.cfg.Limit, r.cfg.RealTimeWindow = 20, time.Minute
	assert.Equal(t, 15, r.lanes(ep, 30))
	assert.Equal(t, 3, r.lanes(ep, 3))
	assert.Equal(t, defaultLanes, r.lanes(endpointLike(), 30), "no pacing")
}

// A target with Configure and lanes of instances of its own runs specs
// side by side, as many as its lanes, each on a lane no running spec
// uses, a spec that configures the target among them; a spec that aims
// at instants runs alone.
func TestSpecsSideBySideEachOnALaneOfItsOwn(t *testing.T) {
	t.Parallel()
	var g gauge
	var (
		mu     sync.Mutex
		busy   = map[int]int{} // lane → running specs with instances there
		shared []int           // lanes two running specs used at once
	)
	target := Target{Name: "exec", Capabilities: contract.Capabilities{Configure: true}, Lanes: 3,
		New: func(ctx context.Context, env Env) (contract.RateLimiterContract, func() error, error) {
			mu.Lock()
			defer mu.Unlock()
			if busy[env.Lane]++; busy[env.Lane] > 1 {
				shared = append(shared, env.Lane)
			}
			return idle{}, func() error {
				mu.Lock()
				busy[env.Lane]--
				mu.Unlock()
				return nil
			}, nil
		}}
	const n, aimed = 7, 3
	var besideAimed atomic.Int32
	cat := gaugedSpecs(n, &g, func(i int, h *Harness) {
		h.Instance(0)
		switch {
		case i == aimed:
			// Long enough that a spec begun beside it would be seen.
			waitFor(func() bool { return g.running.Load() > 1 }, 50*time.Millisecond)
			besideAimed.Store(g.running.Load() - 1)
		case i > 0: // the first runs alone: it measures the margin
			waitFor(func() bool { return g.most.Load() >= 3 }, 20*time.Second)
		}
	})
	cat[2].Needs = []Need{NeedConfigure}
	cat[aimed].Aims = true
	rep, err := cat.Check(context.Background(), Config{}, target)
	require.NoError(t, err)
	assert.Equal(t, int32(3), g.most.Load(), "specs side by side at most: the lanes")
	assert.Empty(t, shared, "lanes used by two specs at once")
	assert.Len(t, busy, 3, "lanes used")
	assert.Zero(t, besideAimed.Load(), "specs beside the one that aims")
	assert.Equal(t, ids(&result.Report{Results: cat.results()}), ids(rep))
	for _, r := range rep.Results {
		assert.Equal(t, result.Passed, r.Status, r.ID+": "+r.Message)
	}
	assert.Contains(t, fmt.Sprint(rep.Notes), "on a lane of instances of its own")
}

// failFastRun checks, Parallel 2 and FailFast, n specs of an endpoint
// of which the spec at index failing fails, and those from index alone
// on must run alone (after the side-by-side ones), and returns the
// report and each spec's status.
func failFastRun(t *testing.T, n, failing, alone int) (*result.Report, map[string]result.Status) {
	t.Helper()
	var g gauge
	cat := gaugedSpecs(n, &g, func(i int, h *Harness) {
		if i == failing {
			h.Failf("s%02d fails", i)
		}
	})
	for i := alone; i < n; i++ {
		cat[i].Needs = []Need{NeedShared}
	}
	rep, err := cat.Check(context.Background(), Config{Parallel: 2, FailFast: true}, endpointLike())
	require.NoError(t, err)
	statuses := map[string]result.Status{}
	for _, r := range rep.Results {
		statuses[r.ID] = r.Status
	}
	return rep, statuses
}

// With FailFast, a failure side by side stops the run: the spec beside it
// finishes, and those after it (here the ones that run alone once the
// others are done) are not run, saying why; the verdict is the failure.
func TestFailFastSideBySide(t *testing.T) {
	t.Parallel()
	rep, statuses := failFastRun(t, 5, 2, 3)
	assert.Equal(t, map[string]result.Status{"core/s00": result.Passed, "core/s01": result.Passed, "core/s02": result.Failed,
		"core/s03": result.NotRun, "core/s04": result.NotRun}, statuses)
	assert.Equal(t, "core/s02", rep.StoppedAt)
	assert.Empty(t, rep.Aborted, "stopping as asked is not an abort")
	assert.Contains(t, rep.Results[3].Message, "not run: the run stopped at its first failure, core/s02 (fail-fast)")
	v := rep.Verdict()
	assert.Equal(t, result.NotConformant, v.Outcome)
	assert.Contains(t, v.Reasons, "the run stopped at its first failure, core/s02, as asked (fail-fast)")
}

// With FailFast, a failure of the first spec, which runs alone before the
// others go side by side, stops the run there.
func TestFailFastAtTheFirstSpec(t *testing.T) {
	t.Parallel()
	rep, statuses := failFastRun(t, 4, 0, 4)
	assert.Equal(t, map[string]result.Status{"core/s00": result.Failed, "core/s01": result.NotRun, "core/s02": result.NotRun,
		"core/s03": result.NotRun}, statuses)
	assert.Equal(t, "core/s00", rep.StoppedAt)
}
