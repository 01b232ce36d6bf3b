package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/result"
)

// MaxParallel bounds Config.Parallel: specs side by side in one run.
const MaxParallel = grade.MaxParallel

// defaultLanes bounds the specs side by side when Config.Parallel is 0.
const defaultLanes = 8

// lanes is how many of n specs of t run side by side: 1 (one at a time,
// as always) unless specs of t cannot see each other. Today that is an
// endpoint (t.Request) with identities per user, a fixed policy (no
// Configure: no configuration two specs would share) and real time (the
// fake clock is one clock, shared by every instance). Every spec has users
// and keys of its own, and the endpoint's pacing (t.MaxRPS) is one Pacer
// for every request, so side by side specs share --max-rps. With
// Config.Parallel 0 the lanes are what the pacing leaves room for: the
// largest burst a spec sends (2N+8) from each lane within a quarter of the
// window, at most defaultLanes. In-process targets, --exec and --target
// URLs run one spec at a time (issue #53 leaves them for later).
func (r *runner) lanes(t Target, n int) int {
	if r.cfg.Parallel == 1 || n < 2 || t.Capabilities.Clock || t.SharedLimit || t.Request == nil || t.Capabilities.Configure {
		return 1
	}
	if r.cfg.Parallel > 1 {
		return min(r.cfg.Parallel, n)
	}
	room := defaultLanes
	if t.MaxRPS > 0 {
		burst := 2*r.cfg.Limit + 8
		room = int(int64(t.MaxRPS) * int64(r.cfg.RealTimeWindow) / int64(4*burst) / 1e9)
	}
	return max(1, min(room, defaultLanes, n))
}

// alone says whether s must run with no other spec beside it: it breaks,
// inspects or shares the target's store, or configures the target.
func alone(s *Spec) bool {
	for _, n := range []Need{NeedOwnRedis, NeedInspect, NeedShared, NeedConfigure} {
		if slices.Contains(s.Needs, n) {
			return true
		}
	}
	return false
}

// sideBySide runs specs into rep, lanes of them at a time, the ones that
// must be alone one at a time between, and appends their results in
// catalogue order. Once a spec aborts the run the specs not yet begun are
// not run; the ones already running beside it finish.
func (r *runner) sideBySide(ctx context.Context, t Target, specs []Spec, rep *result.Report, lanes int) {
	r.mu.Lock()
	chosen := "as many as the pacing leaves room for"
	if r.cfg.Parallel > 1 {
		chosen = fmt.Sprintf("--parallel %d", r.cfg.Parallel)
	}
	r.notes = append(r.notes, fmt.Sprintf("up to %d specs ran side by side after the first (%s; --parallel 1 runs them one at a time): each has users and keys of its own, and the pacing (--max-rps) is shared", lanes, chosen))
	r.mu.Unlock()
	for i := 0; i < len(specs); {
		if alone(&specs[i]) || rep.Aborted != "" {
			r.checkOne(ctx, t, &specs[i], rep)
			i++
			continue
		}
		j := i + 1
		for j < len(specs) && !alone(&specs[j]) {
			j++
		}
		r.pool(ctx, t, specs[i:j], rep, lanes)
		i = j
	}
}

// pool runs specs, lanes at a time, and appends their results to rep in
// catalogue order, setting rep.Aborted as the sequential run would.
func (r *runner) pool(ctx context.Context, t Target, specs []Spec, rep *result.Report, lanes int) {
	results := make([]result.Result, len(specs))
	var (
		mu      sync.Mutex
		next    int
		aborted string
		wg      sync.WaitGroup
	)
	for range min(lanes, len(specs)) {
		wg.Go(func() {
			for {
				mu.Lock()
				k, why := next, aborted
				next++
				mu.Unlock()
				if k >= len(specs) {
					return
				}
				if why != "" {
					results[k] = r.notRun(&specs[k], "not run: "+why, ctx.Err() != nil)
					continue
				}
				results[k], why = r.runOne(ctx, t, &specs[k])
				mu.Lock()
				if aborted == "" {
					aborted = why
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Aborted = aborted
	rep.Results = append(rep.Results, results...)
	reconcile(rep, r.diags)
}

// runOne runs s and returns its result and why the run cannot go on
// ("" to go on), as runInto and checkOne decide for one spec at a time.
func (r *runner) runOne(ctx context.Context, t Target, s *Spec) (result.Result, string) {
	res := r.runSpec(ctx, t, s)
	if stuck := r.stuckSpec(); stuck != "" {
		return res, stuck
	}
	if why := r.afterSpec(ctx, t, &res); why != "" {
		return res, why
	}
	if ctx.Err() != nil {
		return res, "interrupted: " + context.Cause(ctx).Error()
	}
	return res, ""
}
