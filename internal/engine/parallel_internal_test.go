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

// A --target's processes are every spec's: specs that configure it as the
// run does go side by side, one that changes its configuration (declaring
// NeedConfigure) runs alone, and one that changes it without declaring
// so is a bug of the catalogue, an error, never a verdict.
func TestSpecsThatConfigureRunAlone(t *testing.T) {
	t.Parallel()
	var g gauge
	var mu sync.Mutex
	beside := map[string]int32{} // spec id → specs running as it configured
	var together int32           // the specs of the pool
	var entered, recorded atomic.Int32
	body := func(n int) func(h *Harness) {
		return func(h *Harness) {
			g.enter()
			defer g.leave()
			if alone(h.spec, len(h.target.Addresses) > 0) || h.spec.ID == "core/a" {
				// Give a spec begun beside it the time to be seen.
				waitFor(func() bool { return g.running.Load() > 1 }, 50*time.Millisecond)
			} else {
				// The pool's specs meet, each sees all, then each configures.
				entered.Add(1)
				waitFor(func() bool { return entered.Load() >= together }, 10*time.Second)
			}
			mu.Lock()
			beside[h.spec.ID] = g.running.Load()
			mu.Unlock()
			recorded.Add(1)
			waitFor(func() bool {
				return recorded.Load() >= together+1 || alone(h.spec, len(h.target.Addresses) > 0) || h.spec.ID == "core/a"
			}, 10*time.Second)
			h.Configure(n, h.W())
		}
	}
	cat := Catalogue{
		{ID: "core/a", Level: result.Core, Run: body(5)},
		{ID: "core/b", Level: result.Core, Run: body(5)},
		{ID: "core/c", Level: result.Core, Needs: []Need{NeedConfigure}, Run: body(7)},
		{ID: "core/d", Level: result.Core, Run: body(5)},
		{ID: "core/e", Level: result.Core, Configures: true, Run: body(6)},
		{ID: "core/f", Level: result.Core, Run: body(5)},
		{ID: "core/g", Level: result.Core, Run: body(9)},
	}
	target := Target{Name: "url", Addresses: []string{"http://x"}, Capabilities: contract.Capabilities{Configure: true}, New: idleTarget}
	together = 4 // b, d, f, g
	rep, err := cat.Check(context.Background(), Config{Parallel: 4, Limit: 5}, target)
	require.NoError(t, err)
	require.Len(t, rep.Results, 7)
	assert.Equal(t, ids(&result.Report{Results: cat.results()}), ids(rep), "catalogue order")
	for _, r := range rep.Results[:6] {
		assert.Equal(t, result.Passed, r.Status, r.ID+": "+r.Message)
	}
	for id, want := range map[string]int32{"core/a": 1, "core/c": 1, "core/e": 1, "core/b": 4, "core/d": 4, "core/f": 4} {
		assert.Equal(t, want, beside[id], "%s: specs running as it configured", id)
	}
	assert.Equal(t, result.Errored, rep.Results[6].Status)
	assert.Contains(t, rep.Results[6].Message, "configures 9 per 1s, not the 5 per 1s in force, without declaring NeedConfigure or Configures (a bug of the catalogue)")

	// In process, a spec's instances are its own: configuring runs beside.
	target.Addresses = nil
	g, together = gauge{}, 5 // b to f
	entered.Store(0)
	recorded.Store(1) // a's
	rep, err = cat[:6].Check(context.Background(), Config{Parallel: 6, Limit: 5}, target)
	require.NoError(t, err)
	assert.Equal(t, int32(5), g.most.Load(), "every spec after the first side by side in process")

	shared := endpointLike()
	shared.SharedLimit = true
	assert.Equal(t, 1, (&runner{cfg: Config{Parallel: 4}}).lanes(shared, 4), "--identity none")
	clock := endpointLike()
	clock.Capabilities.Clock = true
	assert.Equal(t, 1, (&runner{cfg: Config{Parallel: 4}}).lanes(clock, 4), "fake clock")
	assert.Equal(t, 4, (&runner{cfg: Config{Parallel: 4}}).lanes(Target{New: idleTarget}, 4), "in process, real time")
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
	assert.Equal(t, defaultLanes, r.lanes(Target{New: idleTarget}, 30))
}
