package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/result"
)

// MaxParallel bounds Config.Parallel: specs side by side in one run.
const MaxParallel = grade.MaxParallel

// defaultLanes bounds the specs side by side when Config.Parallel is 0.
const defaultLanes = 16

// lanes is how many of n specs of t run side by side: 1 (one at a time,
// as always) unless specs of t cannot see each other. Every spec has
// users and keys of its own, so in real time they can, but for what the
// target's configuration shares: every spec configures the target as it
// starts, and a limiter may forget every user when configured, even
// alike (measured: sethvargo/go-limiter's and pyrate-limiter's cards,
// whose shims build a new limiter on Configure, failed 16 specs side by
// side that pass one at a time). So a target with Configure runs specs
// side by side only on lanes of instances of their own (t.Lanes: --exec
// starts processes per lane); one without (an endpoint or an RLS server,
// whose policy is fixed) on its one set. Only in real time (the fake
// clock has nothing to wait out), with a limit per user (--identity none
// shares one). Its pacing (t.MaxRPS) is one Pacer for every request, so
// side by side specs share --max-rps. With Config.Parallel 0 the lanes
// are what the pacing leaves room for: the largest burst a spec sends
// (2N+8) from each lane within a quarter of the window, at most
// defaultLanes.
func (r *runner) lanes(t Target, n int) int {
	if r.cfg.Parallel == 1 || n < 2 || t.Capabilities.Clock || t.SharedLimit {
		return 1
	}
	most := n
	if t.Capabilities.Configure {
		most = min(n, max(1, t.Lanes))
	}
	if r.cfg.Parallel > 1 {
		return min(r.cfg.Parallel, most)
	}
	room := defaultLanes
	if t.MaxRPS > 0 {
		burst := 2*r.cfg.Limit + 8
		room = int(int64(t.MaxRPS) * int64(r.cfg.RealTimeWindow) / int64(4*burst) / 1e9)
	}
	return max(1, min(room, defaultLanes, most))
}

// alone says whether s must run on t with no other spec beside it: it
// breaks, inspects or shares the target's store, or aims at instants
// that specs on lanes beside it would make it miss (Spec.Aims: an
// endpoint's lanes share its pace, not processes on the grader's cores,
// and its cards kept their verdicts side by side). A spec that configures
// the target runs beside others only on a lane of its own (lanes), and
// configures only that lane's instances.
func alone(t Target, s *Spec) bool {
	if s.Aims && t.Capabilities.Configure {
		return true
	}
	for _, n := range []Need{NeedOwnRedis, NeedInspect, NeedShared} {
		if slices.Contains(s.Needs, n) {
			return true
		}
	}
	return false
}

// inLane is t for the specs of one lane: its instances are the lane's
// (Env.Lane).
func inLane(t Target, lane int) Target {
	if lane == 0 || t.New == nil {
		return t
	}
	build := t.New
	t.New = func(ctx context.Context, env Env) (contract.RateLimiterContract, func() error, error) {
		env.Lane = lane
		return build(ctx, env)
	}
	return t
}

// sideBySide runs specs into rep: those that may share the target at once,
// lanes of them at a time, then those that must be alone one at a time,
// and appends the results in catalogue order. Once a spec aborts the run
// the specs not yet begun are not run; the ones already running beside
// it finish.
func (r *runner) sideBySide(ctx context.Context, t Target, specs []Spec, rep *result.Report, lanes int) {
	r.mu.Lock()
	chosen := "as many as the pacing leaves room for"
	if t.Capabilities.Configure {
		chosen = "as many as its lanes"
	}
	if r.cfg.Parallel > 1 {
		chosen = fmt.Sprintf("--parallel %d", r.cfg.Parallel)
	}
	own := "each has users and keys of its own, and the pacing (--max-rps) is shared"
	aloneOnes := "those that inspect or break its store, or share it between instances,"
	if t.Capabilities.Configure {
		own = "each has users and keys of its own, on a lane of instances of its own that no other spec configures"
		aloneOnes = "those that inspect or break its store, share it between instances, or aim at an instant (a window's edge, one millisecond) that specs beside them on this machine would make them miss,"
	}
	r.notes = append(r.notes, fmt.Sprintf("up to %d specs ran side by side after the first (%s; --parallel 1 runs them one at a time): %s; %s ran alone", lanes, chosen, own, aloneOnes))
	r.mu.Unlock()
	var together, single []int
	for i := range specs {
		if alone(t, &specs[i]) {
			single = append(single, i)
		} else {
			together = append(together, i)
		}
	}
	results := make([]result.Result, len(specs))
	halt := r.pool(ctx, t, specs, together, results, lanes)
	for _, i := range single {
		if halt.why() != "" {
			results[i] = r.notRun(&specs[i], "not run: "+halt.why(), ctx.Err() != nil)
			continue
		}
		results[i], halt = r.runOne(ctx, t, &specs[i])
	}
	rep.Aborted, rep.StoppedAt = halt.aborted, halt.failedAt
	rep.Results = append(rep.Results, results...)
	reconcile(rep, r.diags)
}

// halt is why a run runs no further spec: aborted (it cannot go on), or
// failedAt, the spec whose failure stopped it (Config.FailFast); both
// empty while it goes on.
type halt struct{ aborted, failedAt string }

func (h halt) why() string {
	if h.failedAt != "" {
		return failFastWhy(h.failedAt)
	}
	return h.aborted
}

// pool runs the specs at the indices which, lanes at a time, into
// results, and returns why the run cannot go on (none to go on), as the
// sequential run would decide.
func (r *runner) pool(ctx context.Context, t Target, specs []Spec, which []int, results []result.Result, lanes int) halt {
	var (
		mu      sync.Mutex
		next    int
		stopped halt
		wg      sync.WaitGroup
	)
	for lane := range min(lanes, len(which)) {
		t := inLane(t, lane)
		wg.Go(func() {
			for {
				mu.Lock()
				k, why := next, stopped.why()
				next++
				mu.Unlock()
				if k >= len(which) {
					return
				}
				s := &specs[which[k]]
				if why != "" {
					results[which[k]] = r.notRun(s, "not run: "+why, ctx.Err() != nil)
					continue
				}
				var h halt
				results[which[k]], h = r.runOne(ctx, t, s)
				mu.Lock()
				if stopped.why() == "" {
					stopped = h
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return stopped
}

// runOne runs s and returns its result and why the run cannot go on
// (none to go on), as runInto and checkOne decide for one spec at a time.
func (r *runner) runOne(ctx context.Context, t Target, s *Spec) (result.Result, halt) {
	res := r.runSpec(ctx, t, s)
	if stuck := r.stuckSpec(); stuck != "" {
		return res, halt{aborted: stuck}
	}
	if why := r.judgeAround(ctx, t, s, &res); why != "" {
		return res, halt{aborted: why}
	}
	if ctx.Err() != nil {
		return res, halt{aborted: "interrupted: " + context.Cause(ctx).Error()}
	}
	if r.stopsHere(res) {
		return res, halt{failedAt: res.ID}
	}
	return res, halt{}
}
