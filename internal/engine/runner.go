package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	mrand "math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/stall"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/result"
)

// start is the fake clock's reading when a spec starts: 2026-01-01T00:00Z,
// a multiple of every window a spec uses, so epoch-aligned windows are easy
// to reason about.
var FakeStart = time.UnixMilli(1_767_225_600_000)

// runner runs specs of one run; it owns the Redis it obtained.
type runner struct {
	// mu guards the bookkeeping specs running side by side share (count,
	// notes, diags, quietSince, stuck, sweep, reused, the margin, the
	// Progress and probed callbacks); see parallel.go.
	mu       sync.Mutex
	cfg      Config
	cat      Catalogue // the specs it selects from
	redis    *redisenv.Redis
	ownRedis bool
	runID    string
	count    int
	sweep    bool     // keys were left for finish to sweep
	notes    []string // what the run has to say beyond results
	// profile is what targets are graded against.
	profile model.Variant
	// probed, when set, gets every spec's harness once it has run (identify
	// reads their traces).
	probed func(s *Spec, h *Harness)
	// quietSince is when the last spec ended: with a limit shared by every
	// request, the next one waits until its state has left.
	quietSince, marginAt time.Time
	// margin is how far from a window edge real-time specs aim, measured
	// from the target's round trips on the first real-time spec.
	margin time.Duration
	// stuck, once set, says which spec's goroutine never returned after
	// its time ran out: the run stops there.
	stuck string
	// refused is the first configuration, valid in the contract, that the
	// target refused with ErrInvalidConfig (identify chooses other
	// windows, or says why it cannot run).
	refused atomic.Pointer[refusal]
	// granularity is the unit of every window the run chooses (1ms: any),
	// learned before the first spec that runs (learnGranularity).
	granularity time.Duration
	// sized: Config.RealTimeWindow was left at 0, so the real-time window
	// may be as short as the target's round trips allow when it declares
	// millisecond windows (shortWindow).
	sized bool
	// reused are the specs taken from Config.Prior (see prior).
	reused []string
	// diags is what each spec's answers say of the algorithms the limiter
	// may be, by spec id (reconcile weighs them all).
	diags map[string]*diagnosed
	// watch follows the run's store while specs run, from the first spec
	// on (nil without a store); watching starts it once.
	watch    *storeWatch
	watching sync.Once
}

// refusal is a valid configuration a target refused, with its error.
type refusal struct {
	n   int
	w   time.Duration
	err error
}

// noteRefusal records a refusal of Configure(n, w) with err, when n and w
// are valid: the target refuses a configuration the contract says it must
// take (or, above the bounds, may refuse).
func (r *runner) noteRefusal(n int, w time.Duration, err error) {
	if refusedChoice(n, w, err) {
		r.refused.CompareAndSwap(nil, &refusal{n, w, err})
	}
}

// runIDBytes is the length of a run's random id, before hex.
const runIDBytes = 8

func newRunner(ctx context.Context, cfg Config, cat Catalogue, targets ...Target) (*runner, error) {
	sized := cfg.RealTimeWindow == 0
	cfg, err := cat.validated(cfg)
	if err != nil {
		return nil, err
	}
	// The run id starts every user id and key: 8 random bytes, so that
	// runs sharing a target or a Redis (concurrent CI jobs) never meet.
	id := make([]byte, runIDBytes)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	profile, err := cfg.Variant()
	if err != nil {
		return nil, fmt.Errorf("Config.Profile: %w", err)
	}
	r := &runner{cfg: cfg, cat: cat, redis: cfg.Redis, runID: hex.EncodeToString(id), profile: profile, diags: map[string]*diagnosed{}, sized: sized}
	needsRedis := false
	for _, t := range targets {
		if err := validGranularity(t); err != nil {
			return nil, err
		}
		needsRedis = needsRedis || t.NeedsRedis || t.Capabilities.StoreInspection
	}
	if needsRedis && r.redis == nil {
		red, err := redisenv.Obtain(ctx)
		if err != nil {
			return nil, err
		}
		r.redis, r.ownRedis = red, true
	}
	return r, nil
}

func (r *runner) close() error {
	r.watching.Do(func() {}) // no watch starts after this
	if r.watch != nil {
		r.watch.stop()
	}
	if r.ownRedis {
		return r.redis.Close()
	}
	return nil
}

// selected lists the specs of the run's level and ids.
func (r *runner) selected() []Spec { return selectSpecs(r.cfg, r.cat) }

// selectSpecs lists the specs cfg selects, in catalogue order.
func selectSpecs(cfg Config, cat Catalogue) []Spec {
	var out []Spec
	for _, s := range cat {
		if cfg.Level.Includes(s.Level) && s.matches(cfg.IDs) && s.hasLabel(cfg.Labels) {
			out = append(out, s)
		}
	}
	return out
}

// newReport starts the report of a run on t.
func (r *runner) newReport(t Target) *result.Report {
	return &result.Report{Target: t.Name, Targets: t.Addresses, Seed: r.cfg.Seed, Level: r.cfg.Level, Profile: r.profile.String(),
		Limit: r.cfg.Limit, Window: r.specWindow(t), Selection: selection(r.cfg)}
}

// notRun is the result of a spec the run never reached: interrupted when
// the run was stopped, not run when it could not go on.
func (r *runner) notRun(s *Spec, why string, stopped bool) result.Result {
	st := result.NotRun
	if stopped {
		st = result.Interrupted
	}
	res := result.Result{ID: s.ID, Level: s.Level, Rule: s.ruleFor(r.profile), Status: st, Message: why,
		ExpectedFailure: slices.Contains(r.cfg.ExpectFail, s.ID)}
	if r.cfg.Progress != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.cfg.Progress(res)
	}
	return res
}

// missing says why target cannot run s, or "" when it can; structural
// when no target of its kind can (an HTTP target cannot take a cancelled
// context in flight, only an endpoint has rate-limit fields), rather than
// a capability it could declare or an option the run could be given.
func (r *runner) missing(t Target, s *Spec) (why string, structural bool) {
	c := t.Capabilities
	for _, n := range s.Needs {
		var why string
		switch n {
		case NeedClockBack:
			if !c.Clock {
				why = "steps the clock back, which only clock control can do"
			}
		case NeedConfigure:
			if !c.Configure {
				why = "needs Configure, which the target does not declare"
			}
		case NeedAnyWindow:
			if c.UnitWindows {
				why = fmt.Sprintf("grades Configure over the contract's range of windows, and the target takes only %v (its protocol's units)", contract.UnitWindowList())
			}
		case NeedRemaining:
			if !c.Remaining {
				why = "needs GetRemainingRequests, which the target does not declare"
			}
		case NeedCost:
			if !c.Cost {
				why = "needs weighted requests, which the target does not declare (implement contract.CostLimiter and declare Capabilities.Cost; over HTTP, answer \"cost\": true in the capabilities)"
			}
		case NeedReset:
			if !c.Reset {
				why = "needs Reset, which the target does not declare"
			}
		case NeedShared:
			if !c.SharedStore {
				why = "needs several instances on one store (declare Capabilities.SharedStore; on the command line, give --target, --endpoint or --rls more than once, or --instances 2 with --exec)"
			}
		case NeedInspect:
			if !c.StoreInspection {
				why = "needs to read the target's keys (declare Capabilities.StoreInspection; on the command line, give --store-url and --store-prefix)"
			}
		case NeedInProcess:
			if len(t.Addresses) > 0 {
				structural = true
				why = "needs an in-process target: over HTTP a call cancelled before it is sent never reaches the target, and one cancelled in flight has an unknown outcome"
			}

		case NeedOpaqueIDs:
			if t.Request != nil {
				structural = true
				why = "grades how the limiter keys user ids it is given; an endpoint is sent identities the grader generates"
			}
		case NeedUsers:
			if t.SharedLimit {
				structural = true
				why = "needs several users with limits of their own; every request of this service shares one limit (--identity none)"
			}
		case NeedEndpoint:
			if t.Request == nil {
				structural = true
				why = "grades the rate-limit fields of HTTP answers: only an endpoint (rlconform run --endpoint) has them"
			}
		case NeedOwnRedis:
			why = r.faultWhy(t)
		}
		if why != "" {
			return why, structural
		}
	}
	return "", false
}

// failedOrUnanswered reports whether res failed, or ended inconclusive at
// a call that got no answer: either may be a target gone dead.
func failedOrUnanswered(res result.Result) bool {
	return res.Status == result.Failed || res.Status == result.Inconclusive && res.Failure != nil && res.Failure.Kind == result.KindNoAnswer
}

// aliveProbes is how many times stillAlive asks before it takes a target
// for dead: one lost answer (a connection reset on the way) is not a
// target gone.
const aliveProbes = 3

// stillAlive asks a target whose spec just failed whether it still answers,
// up to aliveProbes times within 10s; an error means the run cannot go on.
func (r *runner) stillAlive(ctx context.Context, t Target, res result.Result) error {
	if t.Alive == nil || !failedOrUnanswered(res) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	for range aliveProbes {
		if err = t.Alive(ctx); err == nil || ctx.Err() != nil {
			break
		}
	}
	r.mu.Lock()
	r.quietSince = time.Now() // the probe, too, spends a shared limit
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s stopped answering during %s, the run cannot go on: %w", t.Name, res.ID, err)
	}
	return nil
}

// runSpec runs one spec on a fresh instance of target and never panics.
func (r *runner) runSpec(ctx context.Context, t Target, s *Spec) (res result.Result) {
	r.mu.Lock()
	r.count++
	index := r.count
	r.mu.Unlock()
	r.watchStore()
	began := time.Now()
	res = result.Result{ID: s.ID, Level: s.Level, Rule: s.ruleFor(r.profile), ExpectedFailure: slices.Contains(r.cfg.ExpectFail, s.ID)}
	defer func() {
		res.Duration = time.Since(began)
		if r.cfg.Progress != nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.cfg.Progress(res)
		}
	}()
	if ctx.Err() != nil {
		res.Status, res.Message = result.Interrupted, "the run was stopped before this spec began"
		return res
	}
	if why, structural := r.missing(t, s); why != "" {
		res.Status, res.Message, res.Structural = result.Skipped, why, structural
		return res
	}
	if why := s.outside(r.profile, t.Capabilities.Clock); why != "" {
		res.Status, res.Message, res.Structural = result.Skipped, why, true
		return res
	}
	res.Mode = result.RealTime
	if t.Capabilities.Clock {
		res.Mode = result.FakeClock
	}
	if g, ok := r.prior(t, s); ok {
		res.Status, res.Message = result.Passed, takenFrom(g, r.cfg.Limit, r.specWindow(t))
		return res
	}
	r.learnGranularity(ctx, t)
	specCtx, cancel := context.WithTimeout(ctx, r.cfg.SpecTimeout)
	defer cancel()

	h := r.newH(specCtx, t, s, index)
	done := make(chan result.Result, 1)
	go func() { done <- h.execute() }()
	select {
	case out := <-done:
		res.Status, res.Message, res.Failure = out.Status, out.Message, out.Failure
		r.mu.Lock()
		r.diags[s.ID] = h.diag
		if r.probed != nil {
			r.probed(s, h)
		}
		r.mu.Unlock()
	case <-specCtx.Done():
		if r.timedOut(ctx, t, s, h, done, &res) {
			// The spec's goroutine is still running: its instances, keys
			// and model are still in use, so nothing more is touched.
			return res
		}
	}
	r.mu.Lock()
	r.adopt(h)
	r.quietSince = time.Now()
	r.mu.Unlock()
	if res.Status == result.Failed && t.Alive != nil {
		h.restoreConfig(ctx)
	}
	if err := h.close(); err != nil && res.Status == result.Passed {
		res.Status, res.Message = result.Failed, fmt.Sprintf("closing the instances: %v", err)
		res.Failure = &result.Failure{Kind: result.KindTargetError, Summary: res.Message}
	}
	if r.cfg.StorePrefix == "" {
		r.cleanKeys(h)
	}
	return res
}

// timedOut sets the result of a spec whose time ran out: interrupted when
// the run was stopped; failed when a call hung (KindHang); inconclusive
// when every call returned, slowly (KindSlow) or, in real time, while
// the spec waited out its windows (KindOutOfTime). It then waits, bounded, for
// the spec's goroutine, which its cancelled context should end; one that
// does not return leaves r.stuck set, and the run stops there, never going
// on beside it. It returns whether the goroutine is stuck.
func (r *runner) timedOut(ctx context.Context, t Target, s *Spec, h *Harness, done <-chan result.Result, res *result.Result) bool {
	// A call still in flight for a good part of the spec's time hung;
	// with none, every call returned and the target was only slow.
	oldest, times := h.calls.stats()
	var summary string
	switch {
	case ctx.Err() != nil:
		res.Status, res.Message = result.Interrupted, "the run was stopped while this spec ran"
		res.Failure = &result.Failure{Kind: result.KindFault, Summary: res.Message}
	case oldest >= hangBound(r.cfg.SpecTimeout):
		summary = fmt.Sprintf("did not finish within %v: a call has not returned for %v (every call must honour its context)",
			r.cfg.SpecTimeout, oldest.Round(time.Millisecond))
		res.Status, res.Failure = result.Failed, &result.Failure{Kind: result.KindHang, Summary: summary, Hint: s.Hint}
	default:
		summary = r.outOfTime(t, times, res)
	}
	wait := time.NewTimer(hangBound(r.cfg.SpecTimeout))
	defer wait.Stop()
	select {
	case <-done:
		if summary != "" { // the spec is over: its model and timeline are still
			res.Message = h.Report(s.titleFor(r.profile) + ": " + summary)
			h.withTimeline(res)
		}
	case <-wait.C:
		if inCall, _ := h.calls.stats(); inCall > 0 || h.making.Load() > 0 || res.Status == result.Interrupted {
			stuck := fmt.Sprintf("%s did not return within %v of its end (a call into %s ignores its cancelled context): the run stops here, its keys and instances left as they are",
				s.ID, hangBound(r.cfg.SpecTimeout), t.Name)
			if summary != "" {
				res.Message = s.titleFor(r.profile) + ": " + summary + "\n  " + stuck + "\n  timeline so far:\n" + h.timeline.String(0)
			}
			r.setStuck(stuck)
			return true
		}
		// No call is in flight: the spec's goroutine is in rlconform's own
		// code, which no target can make ignore its context.
		stuck := fmt.Sprintf("%s did not return within %v of its end, with no call into %s in flight: rlconform's own work on it did not end (a bug of the grader, please report it); the run stops here, its keys and instances left as they are",
			s.ID, hangBound(r.cfg.SpecTimeout), t.Name)
		res.Status, res.Failure = result.Errored, &result.Failure{Kind: result.KindFault, Summary: stuck}
		res.Message = s.titleFor(r.profile) + ": " + stuck + "\n  where it was:\n" + specStacks() + "\n  timeline so far:\n" + h.timeline.String(0)
		r.setStuck(stuck)
		return true
	}
	return false
}

// setStuck records the first spec whose goroutine never returned.
func (r *runner) setStuck(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stuck == "" {
		r.stuck = why
	}
}

// stuckSpec is r.stuck, read under the lock.
func (r *runner) stuckSpec() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stuck
}

// outOfTime sets res for a spec whose time ran out with every call
// answered, as times says they took, and returns its summary. In real
// time, when the calls took less than half of that time, the spec was
// waiting out its windows: the spec timeout is too short for the window
// (KindOutOfTime), the target is not blamed, and the summary says how
// long a spec may need. Otherwise the calls took the time: too slow to
// grade (KindSlow), the grader's own pacing (an endpoint's MaxRPS) named
// when it is part of each call's time; when a few calls stalled about a
// second while the median call was quick, the summary names connection
// stalls, not the target's speed, and the hint says what to do.
func (r *runner) outOfTime(t Target, times callTimes, res *result.Result) string {
	mean, returned := times.mean(), times.returned
	busy := mean * time.Duration(returned)
	limit := r.cfg.SpecTimeout
	if bound := roundUp(r.specBound(t), time.Second); bound > 0 && busy < limit/2 {
		summary := fmt.Sprintf("did not finish within the spec timeout %v: in real time a spec waits out windows of %v, and may need up to %v; its %d calls took %v in all (%v a call on average): the window, not the target, needs the time; give the spec timeout %v or more (--spec-timeout; Config.SpecTimeout)",
			limit, r.cfg.RealTimeWindow, bound, returned, busy.Round(time.Millisecond), mean.Round(time.Microsecond), max(bound, 2*limit))
		res.Status, res.Failure = result.Inconclusive, &result.Failure{Kind: result.KindOutOfTime, Summary: summary}
		return summary
	}
	paced := ""
	if t.MaxRPS > 0 && !t.Capabilities.Clock {
		paced = fmt.Sprintf(", the grader's pacing at %d requests a second (--max-rps) included", t.MaxRPS)
	}
	if stalled := connectionStalls(times); stalled != "" {
		summary := fmt.Sprintf("did not finish within %v: the target answered all %d calls, but %s; %s: not wrong",
			limit, returned, stalled, stall.Hint)
		res.Status, res.Failure = result.Inconclusive, &result.Failure{Kind: result.KindSlow, Summary: summary, Hint: stall.Hint}
		return summary
	}
	summary := fmt.Sprintf("did not finish within %v: the target answered all %d calls, but slowly (%v a call on average%s): too slow to grade, not wrong",
		limit, returned, mean.Round(time.Microsecond), paced)
	res.Status, res.Failure = result.Inconclusive, &result.Failure{Kind: result.KindSlow, Summary: summary}
	return summary
}

// restoreConfig configures the spec's instances back to the run's own
// configuration after the spec failed, so that the liveness probe that
// follows asks a question the target is known to answer: a target that
// errs only under a configuration the spec set is alive, and its error is
// that spec's failure, not the end of the run.
func (h *Harness) restoreConfig(ctx context.Context) {
	if !h.target.Capabilities.Configure {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h.mu.Lock()
	instances := slices.Clone(h.instances)
	h.mu.Unlock()
	for _, lim := range instances {
		lim.Configure(ctx, h.env.MaxRequests, h.env.Window) //nolint:errcheck // the probe that follows tells
	}
}

// storeFault checks the grader's own Redis after a spec failed: when it no
// longer answers, the failure says nothing about the limiter, and the run
// cannot go on. It returns the reason, or "" when the store is healthy.
func (r *runner) storeFault(ctx context.Context) string {
	if r.redis == nil || ctx.Err() != nil {
		return ""
	}
	// Polled for a while: a Redis that a spec restarted may be loading.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	for {
		try, stop := context.WithTimeout(ctx, time.Second)
		err = r.redis.Client.Ping(try).Err()
		stop()
		if err == nil {
			return ""
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("the grader's Redis at %s stopped answering (%v): the failure says nothing about the limiter", r.redis.Addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// storeWatchEvery is how often the run's store is sampled while specs run.
const storeWatchEvery = 250 * time.Millisecond

// watchStore starts the watch of the run's store, once, when it has one,
// on a client of its own when it can make one: the run's client may be
// busy with the specs' calls (its pool drained), which is no failure of
// the store.
func (r *runner) watchStore() {
	r.watching.Do(func() {
		if r.redis == nil || r.redis.Client == nil {
			return
		}
		client, release := r.redis.Client, func() {}
		if own, err := redisenv.FromURL(context.Background(), r.redis.URL); err == nil {
			client, release = own.Client, func() { own.Close() }
		}
		r.watch = watchStore(client, r.redis.Addr, storeWatchEvery, release)
	})
}

// storeEvidence says how the target's store failed between from and to,
// as the watch of the run's store saw it or the target said it (answers
// of its store-failure policy); "" when nothing says it did.
func (r *runner) storeEvidence(t Target, from, to time.Time) string {
	if r.watch != nil {
		if why := r.watch.during(from, to); why != "" {
			return why
		}
	}
	if t.StoreFailing != nil {
		return t.StoreFailing(from, to)
	}
	return ""
}

// storeFailed turns a spec that passed or failed while the target's store
// failed (storeEvidence) into an inconclusive one: its answers were its
// store-failure policy's, or came from a store that lost what it held,
// not its algorithm's. A spec that puts faults on the store itself
// (robust/store-outage) grades exactly that, and is left as it is.
func (r *runner) storeFailed(ctx context.Context, t Target, s *Spec, res *result.Result) {
	if (res.Status != result.Passed && res.Status != result.Failed) || slices.Contains(s.Needs, NeedOwnRedis) {
		return
	}
	to := time.Now()
	why := r.storeEvidence(t, to.Add(-res.Duration), to)
	if why != "" {
		why = fmt.Sprintf("the target's store failed while the spec ran (%s): its answers then were its store-failure policy's, or came from a store that lost what it held, not its algorithm's; not a verdict", why)
	} else if why = policyPattern(res, t.Capabilities.OnStoreFailure()); why != "" {
		why = "the answers look like a store that failed: " + why
	} else if why = r.refusesFresh(ctx, t, res); why != "" {
		why = "the answers look like a store that failed: " + why
	} else {
		return
	}
	was := "passed"
	if res.Status == result.Failed {
		was = "failed: " + firstLine(res.Message)
	}
	res.Status, res.Message = result.Inconclusive, why+"\n  (it would have "+was+")"
	res.Failure = &result.Failure{Kind: result.KindStoreFailed, Summary: why}
}

// judgeAround judges what happened around spec s, which just ended with
// res: what failed around the limiter (afterSpec: the grader's store, a
// target gone dead; it returns the reason to abort the run, "" to go on),
// else whether the target's store failed while it ran (storeFailed).
func (r *runner) judgeAround(ctx context.Context, t Target, s *Spec, res *result.Result) string {
	if r.watch != nil && slices.Contains(s.Needs, NeedOwnRedis) {
		to := time.Now()
		r.watch.own(to.Add(-res.Duration), to)
	}
	if why := r.afterSpec(ctx, t, res); why != "" {
		return why
	}
	r.storeFailed(ctx, t, s, res)
	return ""
}

// refusesFresh asks a target whose declared store-failure policy is deny,
// after a spec failed that nothing else explains, whether it refuses a
// fresh user's very first request now: no limiter that can decide does
// (every profile admits a first request), and one failing closed does. It
// returns what it saw, "" when the request was admitted or the probe could
// not be made (a limit every request shares, a fake clock).
func (r *runner) refusesFresh(ctx context.Context, t Target, res *result.Result) string {
	c := t.Capabilities
	if res.Status != result.Failed || c.OnStoreFailure() != contract.StoreFailureDeny || c.Clock || t.SharedLimit || t.New == nil || ctx.Err() != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lim, closeLim, err := t.New(ctx, r.baseEnv(t, r.runPrefix()+"fresh:"))
	if err != nil {
		return ""
	}
	if closeLim != nil {
		defer closeLim() //nolint:errcheck // a probe's instance
	}
	user := fmt.Sprintf("%s-fresh-%d", r.runID, time.Now().UnixNano())
	ok, err := lim.AllowRequest(ctx, user)
	r.mu.Lock()
	r.quietSince = time.Now()
	r.mu.Unlock()
	if err != nil || ok {
		return ""
	}
	return fmt.Sprintf("after the spec, a fresh user's very first request was refused, which no limiter that can decide does: the target answers as its declared store-failure policy deny does while its store fails (give --store-url, or have the target mark its policy's answers: %s)", contract.HeaderStoreFailure)
}

// afterSpec decides, after a spec that did not pass, whether what failed was
// around the limiter (the grader's store, a target that stopped answering).
// It turns such a result into an Errored one and returns the reason to abort
// the run; "" means go on.
func (r *runner) afterSpec(ctx context.Context, t Target, res *result.Result) string {
	if res.Status == result.Inconclusive && res.Failure != nil && res.Failure.Kind == result.KindSlow {
		if res.Failure.Hint == stall.Hint {
			return fmt.Sprintf("%s stalled on its connections (%s)", t.Name, res.Failure.Summary)
		}
		return fmt.Sprintf("%s is too slow to grade (%s): raise the spec timeout (--spec-timeout), or grade it where it answers faster", t.Name, res.Failure.Summary)
	}
	if res.Status == result.Inconclusive && res.Failure != nil && res.Failure.Kind == result.KindOutOfTime {
		return fmt.Sprintf("%s ran out of time (%s): every later spec would too", res.ID, res.Failure.Summary)
	}
	if !failedOrUnanswered(*res) {
		return ""
	}
	why := ""
	if res.Status == result.Failed {
		why = r.storeFault(ctx)
	}
	if why == "" {
		if err := r.stillAlive(ctx, t, *res); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		res.Status = result.Errored
		res.Message = why + "\n" + res.Message
		res.Failure = &result.Failure{Kind: result.KindFault, Summary: why}
	}
	return why
}

func (r *runner) newH(ctx context.Context, t Target, s *Spec, index int) *Harness {
	tag := fmt.Sprintf("%s-%02d:", r.runID, index)
	env := r.baseEnv(t, r.runPrefix()+fmt.Sprintf("%02d:", index))
	h := &Harness{ctx: ctx, spec: s, target: t, run: r, tag: tag, start: time.Now(), cfg: r.cfg, margin: r.margin}
	if request := t.Request; request != nil {
		h.target.Request = func(ctx context.Context, i int, user string) (HTTPAnswer, error) {
			h.making.Add(1)
			defer h.making.Add(-1)
			return request(ctx, i, user)
		}
	}
	if fault := t.StoreFault; fault != nil {
		h.target.StoreFault = func(ctx context.Context, f grade.StoreFault) error {
			h.making.Add(1)
			defer h.making.Add(-1)
			return fault(ctx, f)
		}
	}
	if t.Capabilities.Clock {
		h.fake = fakeclock.New(FakeStart)
		env.Clock, h.start = h.fake, FakeStart
	} else {
		// In real time, specs wait out their windows: short ones.
		env.Window = r.cfg.RealTimeWindow
		h.oracle, _ = model.NewOracle(r.profile, env.MaxRequests, env.Window)
	}
	if slices.Contains(s.Needs, NeedOwnRedis) && env.Redis != nil && r.redis != nil {
		// The instances of a spec that faults the store get a client of
		// the run's Redis that gives up within the store timeout (a
		// cluster's nodes keep the run's client).
		if c, err := faultClient(r.redis.URL, r.cfg.StoreTimeout); err == nil {
			env.Redis = c
			h.closers = append(h.closers, c.Close)
		}
	}
	h.env = env
	h.readings, _ = model.NewReadings(r.profile, env.MaxRequests, env.Window)
	sum := fnv.New64a()
	sum.Write([]byte(s.ID))
	h.seed = r.cfg.Seed
	h.rng = mrand.New(mrand.NewPCG(r.cfg.Seed, sum.Sum64()))
	return h
}

// baseEnv is what t's factory gets for instances under prefix (the run's
// StorePrefix instead, when set): the run's limit and window, the real
// clock, and the run's store when t needs one. The caller sets a fake
// clock or another window.
func (r *runner) baseEnv(t Target, prefix string) Env {
	env := Env{Clock: fakeclock.Real{}, KeyPrefix: prefix, MaxRequests: r.cfg.Limit, Window: r.cfg.Window}
	if (t.NeedsRedis || t.Capabilities.StoreInspection) && r.redis != nil {
		env.Redis, env.RedisURL = r.redis.Client, r.redis.URL
	}
	if r.cfg.StorePrefix != "" {
		env.KeyPrefix = r.cfg.StorePrefix
	}
	return env
}

// execute runs the body, turning the panics of Failf, Skipf, and of the
// target itself, into a result.
func (h *Harness) execute() (res result.Result) {
	defer h.withTimeline(&res) // after the result is set, below
	defer func() {
		switch v := recover().(type) {
		case nil:
			res.Status, res.Message = result.Passed, h.passNote
			if f := h.readings.Followed(); f != "" && h.fake != nil {
				res.Message = strings.TrimPrefix(res.Message+"; "+f, "; ")
			}
			// What the answers say of the other algorithms a limiter may
			// be: only a trace the graded profile gives in full says it.
			if clues, graded := h.evidence(false); graded {
				h.diag = &diagnosed{clues: clues, graded: true}
			}
		case failure:
			f := v.f
			f.Hint = h.hint()
			res.Status, res.Failure = result.Failed, &f
			if f.Kind == result.KindFault { // the store or the grader, not the limiter
				res.Status, f.Hint = result.Errored, ""
			}
			res.Message = h.spec.titleFor(h.run.profile) + "\n  " + v.msg
			if f.Kind == result.KindWrongAnswer || f.Kind == result.KindViolation {
				// Name the algorithm the answers show, and give its hint
				// rather than the spec's usual cause (render).
				d := &diagnosed{failed: true, base: res.Message, hint: f.Hint}
				d.clues, d.graded = h.evidence(true)
				if !d.graded && !slices.ContainsFunc(d.clues, func(c clue) bool { return c.explains }) {
					d.clues = nil // nothing gives these answers: they rule nothing out
				}
				h.diag = d
				render(&res, d, nil)
			} else if f.Hint != "" {
				res.Message += "  hint: " + f.Hint + "\n"
			}
		case skipped:
			res.Status, res.Message = result.Skipped, v.reason
		case Inconclusive:
			res.Status, res.Message = result.Inconclusive, h.spec.titleFor(h.run.profile)+"\n  "+v.Msg
			res.Failure = &result.Failure{Kind: cmp.Or(v.Kind, result.KindInconclusive), Summary: firstLine(v.Msg)}
		default:
			// A panic in the grader's own code is a fault of ours, not a
			// verdict; one in the target's code fails the spec.
			where, ours := panicSite()
			summary := fmt.Sprintf("panic in %s: %v", where, v)
			res.Message = h.Report(fmt.Sprintf("%s\n  %s\n%s", h.spec.titleFor(h.run.profile), summary, debug.Stack()))
			if ours {
				res.Status, res.Failure = result.Errored, &result.Failure{Kind: result.KindFault, Summary: "rlconform's own " + summary + " (a bug of the grader, please report it)"}
			} else {
				res.Status, res.Failure = result.Failed, &result.Failure{Kind: result.KindPanic, Summary: "the target panicked: " + summary}
			}
		}
	}()
	if _, err := h.instance(0); err != nil {
		h.failInstance(err)
	}
	if h.fake == nil && h.margin == 0 {
		h.measured = h.measureMargin()
		h.margin, h.cfg.RealTimeWindow = h.measured.margin, h.measured.window
		if w := h.cfg.RealTimeWindow; w != h.W() && h.target.Capabilities.Configure {
			h.configure(h.N(), w, false) // the window was raised for this run
		}
	}
	if h.target.SharedLimit {
		h.quiet()
	}
	h.spec.Run(h)
	if h.pending != nil {
		panic(*h.pending)
	}
	if h.decided < h.spec.MinDecided {
		panic(Inconclusive{Msg: h.Report(fmt.Sprintf("the spec decided %d of the answers it judged (%d undecided), and needs at least %d: nothing it proved is enough to pass",
			h.decided, h.undecided, h.spec.MinDecided))})
	}
	if h.fake == nil && h.decided == 0 && h.undecided > 0 {
		panic(Inconclusive{Msg: h.Report(fmt.Sprintf("in real time every one of the %d judged answers was undecided: %s", h.undecided, h.undecidedWhy(h.W())))})
	}
	return res
}

// quiet waits, for a target whose every request shares one limit, until
// what earlier specs (and the round-trip probe) left of it has expired: a
// window after the last of them for a log, two for the other profiles
// (their state may outlive a window), and the margin.
func (h *Harness) quiet() {
	w := h.W()
	if !h.run.profile.IsSlidingLog() {
		w *= 2
	}
	since := h.run.quietSince
	if h.run.marginAt.After(since) {
		since = h.run.marginAt
	}
	if h.measured != nil && h.measured.at.After(since) { // this spec's own probe
		since = h.measured.at
	}
	if !since.IsZero() {
		h.WaitUntil(since.Add(w + h.Edge()))
	}
	h.Origin()
}

// roundTrips is what the first real-time spec measured of the target's
// round trips: the margin real-time specs aim with, when it was taken, the
// real-time window for it, and what the report should say.
type roundTrips struct {
	margin time.Duration
	at     time.Time
	window time.Duration
	note   string
}

// measureMargin times a few calls of instance 0 and returns how far from a
// window edge real-time specs aim: eight times the slowest round trip plus
// 10ms, at least 20ms. A round trip that stalled (about a second among
// quick ones: stall.Split) is left out of the margin, and the report
// names the stalls: they are a connection waiting for room in the
// target's listen backlog, not its speed, and an answer they delay is
// only undecided. When the margin is more than a fifth of the real-time
// window, the window is raised for the rest of the run, and the report
// says so.
func (h *Harness) measureMargin() *roundTrips {
	lim := h.Instance(0)
	probe := h.User("rtt-probe")
	times := make([]time.Duration, 0, 5)
	for range 5 {
		began := time.Now()
		if h.target.Capabilities.Remaining {
			lim.GetRemainingRequests(h.ctx, probe)
		} else {
			lim.AllowRequest(h.ctx, probe)
		}
		times = append(times, time.Since(began))
	}
	quick, _ := stall.Split(times)
	slowest := slices.Max(quick)
	m := &roundTrips{margin: max(20*time.Millisecond, 8*slowest+10*time.Millisecond), at: time.Now(), window: h.cfg.RealTimeWindow}
	if w := m.window; m.margin > w/5 && (!h.target.Capabilities.Configure || h.target.Capabilities.UnitWindows) {
		// The window is the target's own (or one of its protocol's
		// units, 60 times apart): it cannot be raised.
		m.note = fmt.Sprintf("the slowest of %d round trips took %v, slow for the window %v: answers near its edges will be undecided, and specs that decide nothing inconclusive",
			len(quick), slowest.Round(time.Millisecond), w)
	} else if m.margin > w/5 {
		m.window = raisedWindow(m.margin, raiseUnit(h.target.Capabilities, h.run.granularity))
		m.note = fmt.Sprintf("the real-time window was raised from %v to %v: the slowest of %d round trips took %v, too slow to aim within %v of a window edge",
			w, m.window, len(quick), slowest.Round(time.Millisecond), w/5)
	}
	if short := h.shortWindow(m.margin); short < m.window && m.note == "" {
		m.note = fmt.Sprintf("the real-time window is %v, not %v: the target declares millisecond windows, and %d margins (%v, from the slowest of %d round trips, %v) fit in it; --realtime-window sets it",
			short, m.window, shortMargins, m.margin, len(quick), slowest.Round(time.Millisecond))
		m.window = short
	}
	if stalled := stall.Describe(times); stalled != "" {
		// Said first: it explains the rest.
		m.note = strings.TrimSuffix(fmt.Sprintf("of the round trips timed for the real-time margin, %s; the margin is from the others, and answers a stall delays are undecided (%s). %s", stalled, stall.Hint, m.note), " ")
	}
	return m
}

// adopt takes for the run what a spec that has returned measured of the
// target's round trips.
func (r *runner) adopt(h *Harness) {
	m := h.measured
	if m == nil {
		return
	}
	r.margin, r.marginAt, r.cfg.RealTimeWindow = m.margin, m.at, m.window
	if m.note != "" {
		r.notes = append(r.notes, m.note)
	}
}

// shortMargins is how many margins a window shortened for the round trips
// holds: twice what a window may hold before it is raised (five).
const shortMargins = 10

// shortWindow is the real-time window a run whose window was left to it
// (runner.sized) takes for margin: ten margins, rounded up to a tenth of
// a second, when the target takes windows that short: it declares
// millisecond windows (Capabilities.WindowGranularity 1ms; one that
// declares none may work in coarser units without saying so) and takes
// Configure (its window is the grader's to choose). Otherwise, or when
// that is no shorter, the window in force.
func (h *Harness) shortWindow(margin time.Duration) time.Duration {
	if !mayShorten(h.run.sized, h.target.Capabilities) {
		return h.cfg.RealTimeWindow
	}
	return min(h.cfg.RealTimeWindow, roundUp(shortMargins*margin, 100*time.Millisecond))
}

// mayShorten says whether a run takes windows shorter than its
// RealTimeWindow for a target of caps: the window was left to it (sized),
// and the target takes Configure and declares millisecond windows.
func mayShorten(sized bool, caps contract.Capabilities) bool {
	return sized && caps.Configure && caps.WindowGranularity == time.Millisecond
}

// raiseUnit is what a window raised for slow round trips is a whole
// number of: the granularity the target declares, or, when it declares
// none, whole seconds at least (learned is what the run learned of it):
// a library may take a window of 1.3s and keep its keys for whole
// seconds of it (rate-limiter-flexible's Redis store floors them), which
// no user who configures whole seconds meets.
func raiseUnit(caps contract.Capabilities, learned time.Duration) time.Duration {
	if caps.WindowGranularity != 0 {
		return learned
	}
	return max(learned, time.Second)
}

// raisedWindow is the real-time window for a margin: five margins,
// rounded up to a tenth of a second, then to the target's granularity.
func raisedWindow(margin, granularity time.Duration) time.Duration {
	return roundUp(roundUp(5*margin, 100*time.Millisecond), granularity)
}

// panicSite names the function that panicked, called from a deferred
// recover, and whether it is the grader's own code (the suite package).
func panicSite() (string, bool) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return f.Function, graders(f.Function)
		}
		if !more {
			return "unknown code", false
		}
	}
}

// graders reports whether function is the grader's own code: the facade,
// the engine, the catalogue and the checks they run (not the model, which
// a target may be: targets.Model).
func graders(function string) bool {
	for _, pkg := range []string{"suite", "internal/engine", "internal/specs", "internal/alternatives", "model/lincheck"} {
		if strings.HasPrefix(function, "github.com/rlconform/rlconform/"+pkg+".") {
			return true
		}
	}
	return false
}

// Inconclusive, as a panic value, ends a spec that could not decide (a
// check that timed out): Msg says why.
type Inconclusive struct {
	Msg string
	// Kind is why (result.KindInconclusive when empty).
	Kind result.Kind
}

// cleanKeys deletes the spec's keys, never with a FLUSHDB, so that a shared
// Redis is left as found. With the target's key function the keys of the
// spec's users are deleted by name. Without it, a Redis this run started is
// scanned for the spec's prefix; on any other Redis (which may hold millions
// of unrelated keys, and SCAN MATCH walks them all) the spec's keys are left
// for one sweep of the whole run's prefix at its end.
func (r *runner) cleanKeys(h *Harness) {
	if r.redis == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if keyOf := h.target.KeyOf; keyOf != nil {
		for _, u := range h.UsersSeen() {
			r.redis.Client.Del(ctx, keyOf(h.env.KeyPrefix, u)) // one by one: keys may live in different cluster slots
		}
		if !r.redis.Owned() {
			return
		}
	}
	if !r.redis.Owned() {
		r.mu.Lock()
		r.sweep = true
		r.mu.Unlock()
		return
	}
	keys, _ := redisenv.ScanKeys(ctx, r.redis.Client, redisenv.GlobEscape(h.env.KeyPrefix)+"*")
	for _, k := range keys {
		r.redis.Client.Del(ctx, k)
	}
}

// runPrefix starts the key prefix of every spec of this run.
func (r *runner) runPrefix() string { return "rlc:" + r.runID + "-" }

// finish returns the run's notes, after sweeping, on a Redis this run did
// not start, what the specs left under the run's prefix, in one SCAN
// bounded in time, saying what it could not remove: keys are never left
// silently.
func (r *runner) finish() []string {
	notes := append(r.notes, r.reusedNote()...)
	r.notes, r.reused = nil, nil
	return append(notes, r.sweepKeys()...)
}

// sweepKeys removes what the specs left under the run's prefix on a Redis
// the run did not start.
func (r *runner) sweepKeys() []string {
	if !r.sweep || r.redis == nil {
		return nil
	}
	r.sweep = false
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, err := redisenv.ScanKeys(ctx, r.redis.Client, redisenv.GlobEscape(r.runPrefix())+"*")
	var left []string
	for _, k := range keys {
		if err := r.redis.Client.Del(ctx, k).Err(); err != nil {
			left = append(left, k)
		}
	}
	switch {
	case err != nil:
		return []string{fmt.Sprintf("cleanup: the sweep of %s* at %s stopped (%v) after removing %d keys; the rest expire by their TTLs",
			r.runPrefix(), r.redis.Addr, err, len(keys)-len(left))}
	case len(left) > 0:
		return []string{fmt.Sprintf("cleanup: %d keys under %s* at %s could not be removed (first: %q); they expire by their TTLs",
			len(left), r.runPrefix(), r.redis.Addr, left[0])}
	}
	return nil
}

// hangBound is how long one call may be in flight before a spec that runs
// out of time blames it: a tenth of the spec's time, at least a second.
func hangBound(specTimeout time.Duration) time.Duration {
	return max(time.Second, specTimeout/10)
}

// undecidedWhy names what left the spec's answers undecided under the
// window w, the cause most of them had, measured, and what would decide
// them.
func (h *Harness) undecidedWhy(w time.Duration) string {
	cause, most := model.CauseTiming, 0
	for _, c := range []model.Cause{model.CauseTiming, model.CauseSearch, model.CauseReading, model.CauseNotJudged} {
		if n := h.undecidedBy[c]; n > most {
			cause, most = c, n
		}
	}
	of := ""
	if most < h.undecided {
		of = fmt.Sprintf(" (%d of them)", most)
	}
	widest := ""
	if h.widest > 0 {
		widest = fmt.Sprintf(", the widest call or burst of calls judged took %v", h.widest.Round(time.Millisecond))
	}
	switch cause {
	case model.CauseSearch:
		return fmt.Sprintf("the search over every admissible instant outgrew its bounds%s (%s: thousands of states one user may be in, or a burst's calls spread over too many instants%s); a longer window would not decide them: calls of one user nearer together would (a target nearer the grader, fewer specs side by side with --parallel 1), and clock control (X-Rlc-Now-Ms) decides every answer",
			of, h.ProfileName(), widest)
	case model.CauseReading:
		return fmt.Sprintf("a change of configuration that %s reads several ways came while the users' history still mattered%s; pin the reading the limiter has with reconfigure=NAME in --profile (rlconform list --profile)", h.ProfileName(), of)
	case model.CauseNotJudged:
		return fmt.Sprintf("no rule of %s decides these answers%s (requests of cost 0, or a cost it does not take)", h.ProfileName(), of)
	}
	return fmt.Sprintf("the round trips (margin %v%s) were too slow for the window %v to tell%s; raise the real-time window (--realtime-window)", h.margin, widest, w, of)
}
