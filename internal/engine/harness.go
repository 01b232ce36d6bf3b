package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/redisenv"
	"github.com/rlconform/rlconform/result"
)

// Harness is what a spec body gets: the target's instances, the clock, and the
// model they are checked against. Its checking methods must be called from
// the spec's own goroutine; concurrent phases use the raw methods and assert
// once they are back. It has no exported fields: a spec reads the run and
// records what it judged itself through the methods of author.go, and every
// count, trace and failure is kept by the harness.
type Harness struct {
	ctx context.Context
	// diag is what the answers say of the algorithms the limiter may be,
	// set when the body has run (execute).
	diag   *diagnosed
	spec   *Spec
	target Target
	env    Env
	fake   *fakeclock.Fake // nil in real time
	start  time.Time
	// readings are the profile graded against, on the fake clock: its
	// model once per reading of a change of configuration still followed.
	readings *model.Readings
	// oracle judges answers in real time, where instants are intervals;
	// decided and undecided count its judgements.
	oracle             model.Oracle
	decided, undecided int
	// undecidedBy counts the undecided judgements by their cause, and
	// widest is the widest span of calls among them (a burst's, a
	// call's round trip), for what the spec says when it decided nothing.
	undecidedBy map[model.Cause]int
	widest      time.Duration
	// trace is every checked operation on the fake clock, with its answer,
	// for naming the algorithm a failing history shows.
	trace []TraceOp
	// pending is the first wrong answer, reported when the spec ends.
	pending *failure
	// failedUnder describes the model when the spec first went wrong (its
	// configuration then), for the hint.
	failedUnder string
	// lastDivergence is the differential's last divergence, as evidence.
	lastDivergence result.Failure
	// passNote is what a passing spec has to say (the result's message).
	passNote string
	// sentAt is when the call being checked really left, when its instance
	// says (see sentReporter).
	sentAt   time.Time
	timeline Timeline
	// shrunkFrom and history are what the report's data adds to the
	// timeline (ShrunkFrom, SetHistory).
	shrunkFrom int
	history    *result.Timeline
	rng        *rand.Rand
	seed       uint64
	run        *runner
	tag        string // prefix of every user id of this spec
	// cfg and margin are the run's configuration and real-time margin as
	// this spec runs them; measured is what it found of the target's
	// round trips, for the run to adopt once the spec has returned (a
	// spec that overran its time never writes the run's state).
	cfg      Config
	margin   time.Duration
	measured *roundTrips

	calls inFlight // every call to the target's instances
	// making counts the target's own code running outside those calls
	// (its factory making an instance, an endpoint's Request): a spec
	// stuck there is the target's, not the grader's.
	making    atomic.Int32
	mu        sync.Mutex
	users     map[string]bool // every id User made (guarded by mu)
	instances []contract.RateLimiterContract
	closers   []func() error
}

// failure and skipped end a spec body by panicking; the runner recovers them.
type failure struct {
	msg string         // the whole explanation: summary, configuration, timeline
	f   result.Failure // the same evidence as fields
}
type skipped struct{ reason string }

// Failf ends the spec as failed with a message, the configuration and the
// timeline: a rule broken outside one answer.
func (h *Harness) Failf(format string, args ...any) {
	h.FailWith(result.Failure{Kind: result.KindViolation}, fmt.Sprintf(format, args...))
}

// fail ends the spec as failed with the structured evidence f and the
// message summary (its first line becomes f.Summary). After a divergence
// (see diverge), the first divergence is what the spec reports.
func (h *Harness) FailWith(f result.Failure, summary string) {
	if h.pending != nil {
		panic(*h.pending)
	}
	if h.failedUnder == "" {
		h.failedUnder = h.model().Describe()
	}
	f.Summary = firstLine(summary)
	panic(failure{msg: h.Report(summary), f: f})
}

// diverge records a wrong answer. The spec goes on, recording the
// target's answers without judging them, so that the whole history can
// name the algorithm the target really is; the first divergence is
// reported when the spec ends.
func (h *Harness) diverge(f result.Failure, summary string) {
	if h.pending != nil {
		return
	}
	h.failedUnder = h.model().Describe()
	f.Summary = firstLine(summary)
	h.pending = &failure{msg: h.Report(summary), f: f}
}

// FailStep ends the spec at one operation that answered wrong (got is
// "error: ..." when it failed).
func (h *Harness) FailStep(inst int, now time.Time, op, got, want, explanation string, err error) {
	step, at := h.timeline.len(), FmtOffset(now.Sub(h.start))
	h.timeline.wantAt(step, want)
	f := result.Failure{Kind: result.KindWrongAnswer, Step: step, At: now.Sub(h.start), Instance: inst, Operation: op, Got: got, Want: want, Explanation: explanation}
	if errors.Is(err, contract.ErrNoAnswer) {
		h.NoAnswer(fmt.Sprintf("step %d at %s: %s", step, at, op), err)
	}
	if err != nil {
		f.Kind, f.Got = result.KindTargetError, "error: "+err.Error()
		if _, ok := errors.AsType[*TargetPanic](err); ok {
			f.Kind = result.KindPanic
		}
		msg := fmt.Sprintf("step %d at %s: %s returned an error: %v", step, at, op, err)
		if explanation != "" {
			msg += "\n  " + explanation
		}
		h.FailWith(f, msg)
	}
	msg := fmt.Sprintf("step %d at %s: %s = %s, want %s", step, at, op, got, want)
	if explanation != "" {
		msg += "\n  " + explanation
	}
	h.diverge(f, msg)
}

// NoAnswer ends the spec at a call whose answer never came (a dropped
// connection, a timeout: see contract.ErrNoAnswer). Its outcome is
// unknown, so what follows cannot be judged: a wrong answer found before
// it still fails the spec; otherwise the spec decided what it could up to
// there, and is inconclusive, never failed and never passed.
func (h *Harness) NoAnswer(what string, err error) {
	if h.pending != nil {
		panic(*h.pending)
	}
	panic(Inconclusive{Msg: h.Report(fmt.Sprintf("%s got no answer (%v): its outcome is unknown, so the rest of the spec cannot be judged; this is a fault on the way to the target, not a verdict", what, err)), Kind: result.KindNoAnswer})
}

// NoAnswers returns the first error of errs that is a call without an
// answer (contract.ErrNoAnswer), and how many there are.
//
//lint:ignore ST1008 the error is a finding, not a failure of the call: first the example, then the count
func NoAnswers(errs []error) (first error, n int) {
	for _, err := range errs {
		if errors.Is(err, contract.ErrNoAnswer) {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return first, n
}

// Skipf ends the spec as skipped with a reason.
func (h *Harness) Skipf(format string, args ...any) {
	panic(skipped{fmt.Sprintf(format, args...)})
}

// Fault ends the spec as errored: the grader's own store or wait failed,
// which says nothing about the limiter.
func (h *Harness) Fault(format string, args ...any) {
	h.FailWith(result.Failure{Kind: result.KindFault}, fmt.Sprintf(format, args...))
}

// divergef is diverge for a rule broken outside one answer.
func (h *Harness) divergef(format string, args ...any) {
	h.diverge(result.Failure{Kind: result.KindViolation}, fmt.Sprintf(format, args...))
}

func (h *Harness) Report(msg string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(msg, "\n"))
	fmt.Fprintf(&b, "\n  limit %d, window %v; user ids carry the spec's tag %q", h.model().Limit(), h.model().Window(), h.tag)
	if h.fake != nil {
		b.WriteString("\n  timeline (fake clock, ms since the spec's start):\n")
	} else {
		b.WriteString("\n  timeline (real clock, ms since the spec's start):\n")
	}
	b.WriteString(h.timeline.String(h.InstanceCount()))
	return b.String()
}

// N is the limit in force; W the window.
func (h *Harness) N() int           { return h.model().Limit() }
func (h *Harness) W() time.Duration { return h.model().Window() }

// User returns the id this spec uses for name: name behind the spec's tag,
// so that specs sharing one limiter never share a user.
func (h *Harness) User(name string) string {
	u := h.tag + name
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == nil {
		h.users = map[string]bool{}
	}
	h.users[u] = true
	return u
}

// UsersSeen lists every user id the spec made, for cleanup by key name.
func (h *Harness) UsersSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.users))
	for u := range h.users {
		out = append(out, u)
	}
	return out
}

// Short is the id as the timeline shows it.
func (h *Harness) Short(user string) string {
	u := strings.TrimPrefix(user, h.tag)
	if len(u) > 40 { // long ids: the head, the length and the tail
		return fmt.Sprintf("%s…(%d bytes)…%s", strconv.Quote(u[:12]), len(user), strconv.Quote(u[len(u)-4:]))
	}
	return strconv.Quote(u)
}

// Now is the instant the limiter sees.
func (h *Harness) Now() time.Time { return h.env.Clock.Now() }

// Advance moves the fake clock by d.
func (h *Harness) Advance(d time.Duration) { h.FakeClock().Advance(d) }

// At moves the fake clock to the spec's start plus offset; in real time it
// waits until that instant (at once when it has passed).
func (h *Harness) At(offset time.Duration) {
	if h.fake != nil {
		h.fake.Set(h.start.Add(offset))
		return
	}
	h.WaitUntil(h.start.Add(offset))
}

// Before goes to just before the edge at offset, where an entry made at the
// spec's start still counts: 1ms before on the fake clock; in real time, a
// margin before, which the measured round trip makes safe.
func (h *Harness) Before(offset time.Duration) { h.At(offset - h.Edge()) }

// After goes to the edge at offset, where an entry made at the spec's start
// has just stopped counting: exactly there on the fake clock; in real time,
// a margin after.
func (h *Harness) After(offset time.Duration) {
	if h.fake != nil {
		h.At(offset)
		return
	}
	h.At(offset + h.Edge())
}

// Edge is how far from a window edge a spec aims to be sure which side of
// it an operation falls on: 1ms on the fake clock, the run's real-time
// margin otherwise.
func (h *Harness) Edge() time.Duration {
	if h.fake != nil {
		return time.Millisecond
	}
	return h.margin
}

// Granularity is the unit of the windows the target takes (1ms: any): a
// spec that configures a window of its own chooses a whole multiple of it.
func (h *Harness) Granularity() time.Duration {
	return max(time.Millisecond, h.run.granularity)
}

// TakesWindow says whether the target takes a window of w: a whole
// multiple of its granularity, and one unit when it takes only those
// (Capabilities.UnitWindows).
func (h *Harness) TakesWindow(w time.Duration) bool {
	if h.target.Capabilities.UnitWindows {
		return slices.Contains(contract.UnitWindowList(), w)
	}
	return w%h.Granularity() == 0
}

// Phase starts a phase of a spec and returns its offset: fakeOffset on the
// fake clock (the clock moves there); in real time, now becomes the
// spec's start and the phase begins at 0.
func (h *Harness) Phase(fakeOffset time.Duration) time.Duration {
	if h.fake != nil {
		h.At(fakeOffset)
		return fakeOffset
	}
	h.Origin()
	return 0
}

// Origin makes now the spec's start: in real time, specs measure their
// edges from their first entries, not from when the spec began.
func (h *Harness) Origin() {
	if h.fake == nil {
		h.start = time.Now()
	}
}

// WaitUntil blocks until t in real time, or until the spec ends.
func (h *Harness) WaitUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-h.ctx.Done():
		h.Fault("the spec ran out of time waiting for an instant")
	}
}

func (h *Harness) FakeClock() *fakeclock.Fake {
	if h.fake == nil {
		panic(fmt.Sprintf("rlconform: spec %s moves the fake clock, which only a target with clock control has (a bug of the catalogue)", h.spec.ID))
	}
	return h.fake
}

// Instance returns instance i of the target (0 is made when the spec starts),
// making instances up to i on the same store when needed.
func (h *Harness) Instance(i int) contract.RateLimiterContract {
	lim, err := h.instance(i)
	if err != nil {
		h.failInstance(err)
	}
	return lim
}

// errChoiceRefused marks the refusal of a configuration the grader chose
// and the contract takes (see Configure).
var errChoiceRefused = errors.New("the target refused a configuration the grader chose")

// refusedChoice reports whether err refuses Configure(n, w), a
// configuration the contract takes.
func refusedChoice(n int, w time.Duration, err error) bool {
	return errors.Is(err, contract.ErrInvalidConfig) && contract.ValidateConfig(n, w) == nil
}

// failInstance ends the spec for an instance that could not be made: a
// failure of the target, or inconclusive when it refused the
// configuration the grader chose for it.
func (h *Harness) failInstance(err error) {
	if errors.Is(err, errChoiceRefused) {
		h.refusedInconclusive(err)
	}
	if errors.Is(err, contract.ErrNoAnswer) {
		h.NoAnswer("making an instance", err)
	}
	if errors.Is(err, errNoCost) {
		h.Fault("%v", err)
	}
	h.FailWith(result.Failure{Kind: result.KindTargetError}, err.Error())
}

// refusedInconclusive ends the spec inconclusive after the target refused
// a configuration the grader chose (a wrong answer found before still
// fails it).
func (h *Harness) refusedInconclusive(err error) {
	if h.pending != nil {
		panic(*h.pending)
	}
	panic(Inconclusive{Msg: h.Report(fmt.Sprintf("%v: the grader chose this configuration, which the contract takes, so this spec could not be graded; strict/config-range grades which configurations a limiter must take", err))})
}

func (h *Harness) instance(i int) (contract.RateLimiterContract, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.instances) <= i {
		n := len(h.instances) + 1
		Env := h.env
		Env.Instance = n - 1
		h.making.Add(1)
		lim, closer, err := h.target.New(h.ctx, Env)
		h.making.Add(-1)
		if err != nil {
			return nil, fmt.Errorf("making instance %d of %s: %w", n, h.target.Name, err)
		}
		if closer != nil {
			h.closers = append(h.closers, closer)
		}
		if _, ok := lim.(contract.CostLimiter); !ok && slices.Contains(h.spec.Needs, NeedCost) {
			return nil, fmt.Errorf("%w: instance %d of %s (%T) does not implement contract.CostLimiter", errNoCost, n, h.target.Name, lim)
		}
		lim = guarded{lim, &h.calls}
		if h.target.Capabilities.Configure {
			if err := lim.Configure(h.ctx, h.model().Limit(), h.model().Window()); err != nil {
				h.run.noteRefusal(h.model().Limit(), h.model().Window(), err)
				if refusedChoice(h.model().Limit(), h.model().Window(), err) {
					return nil, fmt.Errorf("%w: Configure(%d, %v) on new instance %d: %w", errChoiceRefused, h.model().Limit(), h.model().Window(), n, err)
				}
				return nil, fmt.Errorf("Configure(%d, %v) on new instance %d: %w", h.model().Limit(), h.model().Window(), n, err)
			}
		}
		h.instances = append(h.instances, lim)
	}
	return h.instances[i], nil
}

func (h *Harness) InstanceCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.instances)
}

// Instances makes sure k instances exist and returns them.
func (h *Harness) Instances(k int) []contract.RateLimiterContract {
	h.Instance(k - 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]contract.RateLimiterContract(nil), h.instances[:k]...)
}

func (h *Harness) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, c := range h.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

func (h *Harness) Record(inst int, at time.Time, op, got string) {
	h.record(Event{At: at.Sub(h.start), inst: inst, Op: op, Got: got})
}

// record adds e to the timeline, with the configuration in force when
// it has none.
func (h *Harness) record(e Event) {
	if e.Limit == 0 {
		m := h.model()
		e.Limit, e.Window = m.Limit(), m.Window()
	}
	h.timeline.Add(e)
}

func AllowedWord(ok bool) string {
	if ok {
		return "allowed"
	}
	return "denied"
}

// Allow sends AllowRequest(user) to instance 0 and checks it with the model.
func (h *Harness) Allow(user string) bool { return h.AllowOn(0, user) }

// AllowOn sends AllowRequest(user) to instance i and checks the answer with
// the model: the spec fails at the first answer the model would not give.
func (h *Harness) AllowOn(i int, user string) bool {
	got := h.checked(i, "AllowRequest", user,
		func(m Model, now time.Time) string { ok, _ := m.Allow(now, user); return AllowedWord(ok) },
		func(lim contract.RateLimiterContract) (string, error) {
			ok, sent, err := AllowSent(h.ctx, lim, user)
			h.sentAt = sent
			return AllowedWord(ok), err
		})
	return got == AllowedWord(true)
}

// sentReporter is an instance that knows when a request really left: an
// endpoint first waits for the grader's own pacing (--max-rps), which says
// nothing of the service and must not widen the call's interval.
type sentReporter interface {
	AllowRequestSent(Ctx context.Context, user string) (ok bool, sent time.Time, err error)
}

// AllowSent is AllowRequest, with the instant the request left when the
// instance knows it (zero otherwise). Through the harness's wrapper
// (guarded), the call is tracked and its panics recovered either way.
func AllowSent(Ctx context.Context, lim contract.RateLimiterContract, user string) (bool, time.Time, error) {
	if r, ok := lim.(sentReporter); ok {
		return r.AllowRequestSent(Ctx, user)
	}
	ok, err := lim.AllowRequest(Ctx, user)
	return ok, time.Time{}, err
}

// Remaining sends GetRemainingRequests(user) to instance 0 and checks it.
func (h *Harness) Remaining(user string) int { return h.RemainingOn(0, user) }

// RemainingOn sends GetRemainingRequests(user) to instance i and checks it.
func (h *Harness) RemainingOn(i int, user string) int {
	got := h.checked(i, "GetRemainingRequests", user,
		func(m Model, now time.Time) string { n, _ := m.Remaining(now, user); return strconv.Itoa(n) },
		func(lim contract.RateLimiterContract) (string, error) {
			n, err := lim.GetRemainingRequests(h.ctx, user)
			return strconv.Itoa(n), err
		})
	n, _ := strconv.Atoi(got)
	return n
}

// checked performs one operation on instance i at the current instant: the
// model answers first (want), then the target (call). The spec fails at an
// error, or at an answer the model would not give, explaining what the model
// counted.
func (h *Harness) checked(i int, name, user string, want func(Model, time.Time) string, call func(contract.RateLimiterContract) (string, error)) string {
	return h.checkedCost(i, name, user, 0, want, call)
}

// checkedCost is checked for an operation with a cost (0: none): a
// weighted AllowRequestN.
func (h *Harness) checkedCost(i int, name, user string, cost int, want func(Model, time.Time) string, call func(contract.RateLimiterContract) (string, error)) string {
	if h.fake == nil {
		return h.checkedRealTime(i, name, user, cost, call)
	}
	lim := h.Instance(i)
	now := h.Now()
	before := h.readings.For(user).Explain(now, h.start, user)
	// The target answers first: an answer of invalid input changes
	// nothing, so no model may see the operation then (on the fake clock
	// the order is no matter: time stands still).
	got, err := call(lim)
	op := h.opName(name, user, cost)
	if err == nil && got == InvalidCostWord {
		h.invalidCost(i, now, time.Time{}, op, user, cost, func() string {
			if m, ok := h.readings.For(user).Clone().(Model); ok {
				return want(m, now)
			}
			return "allowed or denied"
		})
		return AllowedWord(false)
	}
	wants := h.readings.Answers(user, now, func(m model.Replayable) string { return want(m, now) })
	w, differ := wants[0], h.readings.Disagree(user, wants)
	e := Event{At: now.Sub(h.start), inst: i, Op: op, User: h.Short(user), Want: strings.Join(uniq(wants), " or ")}
	if err != nil {
		e.Got = "error"
		h.record(e)
		h.FailStep(i, now, op, "", w, "", err)
	}
	e.Got = got
	h.trace = append(h.trace, TraceOp{At: now, inst: i, Kind: kindOf(name), User: user, Got: got, Cost: cost})
	verdict := h.readings.Keep(user, now, wants, got)
	if n, err := strconv.Atoi(got); err == nil && name == "GetRemainingRequests" && n > h.readings.MostRemaining() {
		verdict = model.Wrong // no reading leaves more than a fresh user has
	}
	e.Undecided = verdict == model.Unjudged
	h.record(e)
	switch verdict {
	case model.Wrong:
		h.FailStep(i, now, op, got, w, strings.ReplaceAll(before+differ, user, h.Short(user)), nil)
	case model.Unjudged:
		h.countUndecided(model.CauseReading, 0)
	default:
		h.decided++
	}
	return got
}

// checkedRealTime performs one operation without clock control: the
// limiter decided at some instant between sending and receiving, and the
// interval oracle judges the answer for every such instant. Only an
// impossible answer fails; an undecided one is counted, not failed.
func (h *Harness) checkedRealTime(i int, name, user string, cost int, call func(contract.RateLimiterContract) (string, error)) string {
	lim := h.Instance(i)
	sent := time.Now()
	h.sentAt = time.Time{}
	got, err := call(lim)
	returned := time.Now()
	if h.sentAt.After(sent) { // the request left later than it was called
		sent = h.sentAt
	}
	return h.judgeRealTime(i, name, user, cost, sent, returned, got, err)
}

// JudgeRealTime judges an operation on instance i sent at sent and
// answered (got, or err) at returned, as checkedRealTime does; the
// http/ specs judge this way the calls their concurrent phases made.
func (h *Harness) JudgeRealTime(i int, name, user string, sent, returned time.Time, got string, err error) string {
	return h.judgeRealTime(i, name, user, 0, sent, returned, got, err)
}

// opName is how an operation on user shows in a timeline:
// "AllowRequest(u)", "AllowRequestN(u, 3)".
func (h *Harness) opName(name, user string, cost int) string {
	if name == opAllowN {
		return fmt.Sprintf("%s(%s, %d)", name, h.Short(user), cost)
	}
	return name + "(" + h.Short(user) + ")"
}

func (h *Harness) judgeRealTime(i int, name, user string, cost int, sent, returned time.Time, got string, err error) string {
	op := h.opName(name, user, cost)
	if err == nil && got == InvalidCostWord {
		h.invalidCost(i, sent, returned, op, user, cost, func() string { return "allowed or denied" })
		return AllowedWord(false)
	}
	e := Event{At: sent.Sub(h.start), Until: returned.Sub(h.start), inst: i, Op: op, User: h.Short(user), Got: got}
	if err != nil {
		e.Got = "error"
		h.record(e)
		h.FailStep(i, sent, op, "", "an answer", "", err)
	}
	h.trace = append(h.trace, TraceOp{At: sent, until: returned, inst: i, Kind: kindOf(name), User: user, Got: got, Cost: cost})
	t := model.TimedOp{User: user, Lo: sent, Hi: returned, Cost: cost}
	switch name {
	case "AllowRequest", opAllowN:
		t.Kind, t.Allowed = model.OpAllow, got == AllowedWord(true)
	default:
		t.Kind = model.OpRemaining
		t.Remaining, _ = strconv.Atoi(got)
	}
	j, why, err := h.oracle.Judge(t)
	if err != nil {
		h.record(e)
		h.Fault("rlconform's real-time oracle refused the operation (a bug of the grader, please report it): %v", err)
	}
	e.Undecided = j == model.Undecided
	h.record(e)
	switch j {
	case model.Impossible:
		want := "denied"
		switch {
		case name != "AllowRequest" && name != opAllowN:
			want = "another count"
		case !t.Allowed:
			want = "allowed"
		}
		h.FailStep(i, sent, op, got, want, fmt.Sprintf("the call took from %s to %s: %s", FmtOffset(sent.Sub(h.start)), FmtOffset(returned.Sub(h.start)), why), nil)
	case model.Undecided:
		h.countUndecided(model.UndecidedCause(h.oracle), returned.Sub(sent))
	default:
		h.decided++
	}
	return got
}

// Reset sends Reset(user) to instance 0 and applies it to the model.
func (h *Harness) Reset(user string) {
	lim := h.Instance(0)
	now := h.Now()
	op := "Reset(" + h.Short(user) + ")"
	if err := lim.Reset(h.ctx, user); err != nil {
		h.Record(0, now, op, "error")
		h.FailStep(0, now, op, "", "ok", "", err)
	}
	if h.fake == nil { // it took effect between sending and the answer
		if _, _, err := h.oracle.Judge(model.TimedOp{Kind: model.OpReset, User: user, Lo: now, Hi: time.Now()}); err != nil {
			h.Fault("rlconform's real-time oracle refused the reset (a bug of the grader, please report it): %v", err)
		}
	}
	h.Record(0, now, op, "ok")
	h.readings.Reset(user)
	h.trace = append(h.trace, TraceOp{At: now, Kind: model.OpReset, User: user})
}

// Configure sends Configure(n, w) to every instance and to the model. A
// refusal (an error wrapping ErrInvalidConfig) of a configuration the
// contract takes ends the spec inconclusive: the grader chose it, and
// only strict/config-range (ConfigureInRange) grades which configurations
// a limiter must take.
func (h *Harness) Configure(n int, w time.Duration) { h.configure(n, w, false) }

// ConfigureInRange is Configure for a spec that grades the contract's
// range: a refusal of a valid configuration fails it, saying why.
func (h *Harness) ConfigureInRange(n int, w time.Duration) { h.configure(n, w, true) }

func (h *Harness) configure(n int, w time.Duration, graded bool) {
	h.Instance(0)
	now := h.Now()
	op := fmt.Sprintf("Configure(%d, %v)", n, w)
	for i, lim := range h.Instances(h.InstanceCount()) {
		if err := lim.Configure(h.ctx, n, w); err != nil {
			h.run.noteRefusal(n, w, err)
			h.Record(i, now, op, "error")
			refused := refusedChoice(n, w, err)
			if refused && !graded {
				h.refusedInconclusive(fmt.Errorf("%s was refused: %w", op, err))
			}
			why := ""
			if g := h.Granularity(); refused && w%g != 0 {
				why = fmt.Sprintf("the target takes only windows in whole multiples of %v, and the contract takes any window from 1ms to %v: a limiter that works in coarser units must still take finer windows (or round them up, saying so in its docs)", g, contract.MaxWindow)
			}
			h.FailStep(i, now, op, "", "ok", why, err)
		}
	}
	h.Record(0, now, op, "ok")
	if err := h.readings.Configure(now, n, w); err != nil {
		panic(fmt.Sprintf("rlconform: spec %s configures invalid values (a bug of the catalogue): %v", h.spec.ID, err))
	}
	if h.oracle != nil {
		// Every instance took it between now and its last answer.
		h.oracle.Judge(model.TimedOp{Kind: model.OpConfigure, Limit: n, Window: w, Lo: now, Hi: h.Now()})
	}
	h.trace = append(h.trace, TraceOp{At: now, Kind: model.OpConfigure, N: n, W: w})
}

// Note adds a line to the timeline for what a spec did outside the
// checked operations (a concurrent phase, say).
func (h *Harness) Note(op, outcome string) { h.Record(0, h.Now(), op, outcome) }

// burstOutcome counts the answers of a concurrent phase.
type burstOutcome struct {
	Allowed, Denied int
	Errors          []error
}

func (o burstOutcome) String() string {
	s := fmt.Sprintf("%d allowed, %d denied", o.Allowed, o.Denied)
	if len(o.Errors) > 0 {
		s += fmt.Sprintf(", %d errors (first: %v)", len(o.Errors), o.Errors[0])
	}
	return s
}

// sendBurst sends perUser AllowRequest to each of users from goroutines
// goroutines and returns each user's answers. Every user's requests are
// spread over every instance (request i of user u goes to instance
// (i+u) mod k), so instances that keep their own state are seen. It does not
// consult the model or move the clock.
func (h *Harness) sendBurst(users []string, perUser, goroutines int, instances []contract.RateLimiterContract) map[string]*burstOutcome {
	type req struct{ user, inst int }
	next := make(chan req, len(users)*perUser)
	for i := range perUser {
		for u := range users {
			next <- req{u, (i + u) % len(instances)}
		}
	}
	close(next)
	var (
		mu  sync.Mutex
		out = map[string]*burstOutcome{}
		wg  sync.WaitGroup
	)
	for _, u := range users {
		out[u] = &burstOutcome{}
	}
	Start := make(chan struct{})
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-Start
			for r := range next {
				ok, err := instances[r.inst].AllowRequest(h.ctx, users[r.user])
				mu.Lock()
				o := out[users[r.user]]
				switch {
				case err != nil:
					o.Errors = append(o.Errors, err)
				case ok:
					o.Allowed++
				default:
					o.Denied++
				}
				mu.Unlock()
			}
		}()
	}
	close(Start)
	wg.Wait()
	return out
}

// burstSpan is how long, at most, a burst should take at the target's
// time a call; maxBurstWidth bounds the goroutines that widening it adds.
const (
	burstSpan     = 2 * time.Second
	maxBurstWidth = 128
)

// burstWidth is how many goroutines send a burst of calls requests that a
// spec asks goroutines to send: more, up to maxBurstWidth, for a far
// target (the median of its calls so far), so that the burst takes about
// burstSpan. A burst is judged by how many it allowed, whatever the
// goroutines (more only press harder on a check-then-add race); 10,016
// calls from 16 at 100 ms a call took 63 s, past a spec's timeout.
func (h *Harness) burstWidth(calls, goroutines int) int {
	_, times := h.calls.stats()
	if times.median <= 0 {
		return goroutines
	}
	need := int((time.Duration(calls)*times.median + burstSpan - 1) / burstSpan)
	return max(goroutines, min(need, maxBurstWidth, calls))
}

// CheckBurst runs Burst with the clock standing still and checks that each
// user got exactly as many requests allowed as the model allows, then
// brings the model up to date.
func (h *Harness) CheckBurst(users []string, perUser, goroutines int, instances []contract.RateLimiterContract) {
	goroutines = h.burstWidth(len(users)*perUser, goroutines)
	if h.fake == nil {
		h.checkBurstRealTime(users, perUser, goroutines, instances)
		return
	}
	now := h.Now()
	wants := map[string][]string{} // each reading's count of allowed, per user
	for _, u := range users {
		wants[u] = h.readings.Answers(u, now, func(m model.Replayable) string {
			allowed := 0
			for range perUser { // at one instant, the model's answers in any order
				if ok, _ := m.Allow(now, u); ok {
					allowed++
				}
			}
			return strconv.Itoa(allowed)
		})
	}
	out := h.sendBurst(users, perUser, goroutines, instances)
	for ui, u := range users {
		op := fmt.Sprintf("%d goroutines on %d instance(s): AllowRequest(%s) ×%d", goroutines, len(instances), h.Short(u), perUser)
		h.record(Event{At: now.Sub(h.start), Op: op, Got: out[u].String(), User: h.Short(u), Kind: result.OpBurst, Count: perUser,
			Want: strings.Join(uniq(wants[u]), " or ") + " allowed"})
		h.trace = append(h.trace, TraceOp{At: now, Kind: model.OpBurst, User: u, N: perUser, allowed: out[u].Allowed, inst: ui, instances: len(instances)})
	}
	for _, u := range users {
		o := out[u]
		want, _ := strconv.Atoi(wants[u][0])
		judged := true
		switch {
		case len(o.Errors) > 0: // the most any reading allows bounds what was
			for _, a := range wants[u] {
				n, _ := strconv.Atoi(a)
				want = max(want, n)
			}
		default:
			switch h.readings.Keep(u, now, wants[u], strconv.Itoa(o.Allowed)) {
			case model.Explained:
				want = o.Allowed // a reading still followed allows as many
			case model.Unjudged:
				want, judged = o.Allowed, false
			}
		}
		if first, n := NoAnswers(o.Errors); n > 0 {
			// Each unanswered call may have been allowed or not: more
			// allowed than the model allows is proven anyway.
			if o.Allowed > want {
				h.divergef("at %s: %d goroutines sent %d AllowRequest(%s) with the clock standing still: %d allowed (and %d without an answer), want at most %d (what %s allows at this instant): two requests passed the same check",
					FmtOffset(now.Sub(h.start)), goroutines, perUser, h.Short(u), o.Allowed, n, want, h.ProfileName())
				panic(*h.pending)
			}
			h.NoAnswer(fmt.Sprintf("at %s: %d of %d concurrent AllowRequest(%s)", FmtOffset(now.Sub(h.start)), n, perUser, h.Short(u)), first)
		}
		if len(o.Errors) > 0 {
			h.Failf("at %s: %d of %d concurrent AllowRequest(%s) failed, first: %v",
				FmtOffset(now.Sub(h.start)), len(o.Errors), perUser, h.Short(u), o.Errors[0])
		}
		if !judged {
			h.countUndecided(model.CauseReading, 0)
			continue
		}
		h.decided++
		if o.Allowed != want && h.pending == nil {
			h.divergef("at %s: %d goroutines on %d instance(s) sent %d AllowRequest(%s) with the clock standing still: "+
				"%d allowed, want exactly %d (what %s allows at this instant); "+
				"more means two requests passed the same check (a race, or instances not sharing one limit), "+
				"fewer means allowed requests were lost",
				FmtOffset(now.Sub(h.start)), goroutines, len(instances), perUser, h.Short(u),
				o.Allowed, want, h.ProfileName())
		}
	}
}

// model is the profile's model under its first reading of a change of
// configuration: the limit and window in force, what a failure is
// described under.
func (h *Harness) model() Model { return h.readings.Primary() }

// ProfileName names the model answers are graded against.
func (h *Harness) ProfileName() string {
	if h.run.profile.IsSlidingLog() {
		return "the model"
	}
	return "the profile " + h.run.profile.String()
}

// hint is what to change after a failure: the spec's usual cause for the
// sliding log, or for every profile when it holds for all; otherwise the
// rules of the profile graded.
func (h *Harness) hint() string {
	hint := h.spec.Hint
	if h.fake == nil && h.spec.RealTimeHint != "" {
		hint = h.spec.RealTimeHint
	}
	if h.run.profile.IsSlidingLog() || h.spec.HintAllProfiles {
		return hint
	}
	under := h.failedUnder
	if under == "" {
		under = h.model().Describe()
	}
	return fmt.Sprintf("the limiter answered otherwise than %s (docs/profiles.md, profile %s): replay the timeline above against its rules", under, h.run.profile.Name)
}

// NewRand returns a generator for a goroutine of a spec, seeded from the
// spec's own generator so that a seed reproduces the run's choices.
func NewRand(Seed uint64) *rand.Rand { return rand.New(rand.NewPCG(Seed, Seed^0x9e3779b97f4a7c15)) }

// TargetPanic is a panic of the target's code, recovered by guarded.
type TargetPanic struct {
	value any
	stack []byte
}

func (p *TargetPanic) Error() string {
	return fmt.Sprintf("the target panicked: %v\n%s", p.value, p.stack)
}

// guarded turns the panics of a target's methods into errors, so that a
// limiter that panics in a goroutine of the grader fails its spec instead
// of killing the grader's process, and tracks the calls in flight, so that
// a spec that runs out of time can tell a hung call from a slow target.
type guarded struct {
	lim   contract.RateLimiterContract
	calls *inFlight
}

func (g guarded) track() func() {
	id := g.calls.begin()
	return func() { g.calls.end(id, time.Time{}) }
}

func recovered(err *error) {
	if v := recover(); v != nil {
		*err = &TargetPanic{value: v, stack: debug.Stack()}
	}
}

func (g guarded) AllowRequest(Ctx context.Context, user string) (ok bool, err error) {
	defer g.track()()
	defer recovered(&err)
	return g.lim.AllowRequest(Ctx, user)
}

// AllowRequestSent is AllowRequest with the instant the request left, when
// the target's instance knows it (see sentReporter); zero otherwise.
func (g guarded) AllowRequestSent(Ctx context.Context, user string) (ok bool, sent time.Time, err error) {
	id := g.calls.begin()
	defer func() { g.calls.end(id, sent) }() // timed from when it left, past the grader's pacing
	defer recovered(&err)
	if r, is := g.lim.(sentReporter); is {
		return r.AllowRequestSent(Ctx, user)
	}
	ok, err = g.lim.AllowRequest(Ctx, user)
	return ok, time.Time{}, err
}

// AllowRequestN passes a weighted request to a limiter that takes one
// ([contract.CostLimiter]); the harness checks that a target declaring
// Capabilities.Cost makes such instances.
func (g guarded) AllowRequestN(Ctx context.Context, user string, n int) (ok bool, err error) {
	defer g.track()()
	defer recovered(&err)
	c, is := g.lim.(contract.CostLimiter)
	if !is {
		return false, fmt.Errorf("%w: the limiter (%T) does not implement contract.CostLimiter", errNoCost, g.lim)
	}
	return c.AllowRequestN(Ctx, user, n)
}

func (g guarded) GetRemainingRequests(Ctx context.Context, user string) (n int, err error) {
	defer g.track()()
	defer recovered(&err)
	return g.lim.GetRemainingRequests(Ctx, user)
}

func (g guarded) Reset(Ctx context.Context, user string) (err error) {
	defer g.track()()
	defer recovered(&err)
	return g.lim.Reset(Ctx, user)
}

func (g guarded) Configure(Ctx context.Context, n int, w time.Duration) (err error) {
	defer g.track()()
	defer recovered(&err)
	return g.lim.Configure(Ctx, n, w)
}

// checkBurstRealTime is CheckBurst without clock control: when the whole
// burst took less than the window, none of its own entries left during it,
// so each user got between N less the entries possibly active and N less
// those certainly active; a longer burst is undecided.
func (h *Harness) checkBurstRealTime(users []string, perUser, goroutines int, instances []contract.RateLimiterContract) {
	began := time.Now()
	out := h.sendBurst(users, perUser, goroutines, instances)
	ended := time.Now()
	for _, u := range users {
		op := fmt.Sprintf("%d goroutines on %d instance(s): AllowRequest(%s) ×%d", goroutines, len(instances), h.Short(u), perUser)
		h.record(Event{At: began.Sub(h.start), Until: ended.Sub(h.start), Op: op, Got: out[u].String(), User: h.Short(u), Kind: result.OpBurst, Count: perUser})
	}
	for ui, u := range users {
		o := out[u]
		if first, n := NoAnswers(o.Errors); n > 0 {
			h.NoAnswer(fmt.Sprintf("%d of %d concurrent AllowRequest(%s)", n, perUser, h.Short(u)), first)
		}
		if len(o.Errors) > 0 {
			h.Failf("%d of %d concurrent AllowRequest(%s) failed, first: %v", len(o.Errors), perUser, h.Short(u), o.Errors[0])
		}
		h.trace = append(h.trace, TraceOp{At: began, until: ended, Kind: model.OpBurst, User: u, N: perUser, allowed: o.Allowed, inst: ui, instances: len(instances)})
		switch j, want := h.oracle.JudgeBurst(u, began, ended, perUser, o.Allowed); j {
		case model.Undecided:
			h.countUndecided(model.UndecidedCause(h.oracle), ended.Sub(began))
		case model.Impossible:
			h.divergef("%d goroutines on %d instance(s) sent %d AllowRequest(%s) within %v (window %v): %d allowed, want %s "+
				"(what %s allows at any instants of the burst); more means two requests passed the same check (a race, or instances not sharing one limit), "+
				"fewer means allowed requests were lost",
				goroutines, len(instances), perUser, h.Short(u), ended.Sub(began).Round(time.Millisecond), h.W(), o.Allowed, want, h.ProfileName())
		default:
			h.decided++
		}
	}
}

// Unguarded is the target's own instance behind the harness's wrapper.
func Unguarded(lim contract.RateLimiterContract) contract.RateLimiterContract {
	if g, ok := lim.(guarded); ok {
		return g.lim
	}
	return lim
}

// timelineData is the timeline as the report's data, around step (the
// failing one, 0 when none), or nil when the spec recorded nothing.
func (h *Harness) timelineData(step int) *result.Timeline {
	ops, total := h.timeline.data(step)
	if total == 0 {
		return nil
	}
	return &result.Timeline{Limit: h.N(), Window: h.W(), Instances: h.InstanceCount(), UserTag: h.tag, Total: total, Ops: ops, ShrunkFrom: h.shrunkFrom}
}

// withTimeline adds the timeline and the history, as data, to the
// evidence of a result that has some.
func (h *Harness) withTimeline(res *result.Result) {
	if f := res.Failure; f != nil {
		f.Timeline, f.History = h.timelineData(f.Step), h.history
	}
}

// uniq is ss without repeats, in order.
func uniq(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// firstLine is s's first line, trimmed.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Config is the run's configuration, its defaults applied, as this spec
// runs it (a real-time window raised by its round-trip probe included).
func (h *Harness) Config() Config { return h.cfg }

// Profile is the profile the run grades against.
func (h *Harness) Profile() model.Variant { return h.run.profile }

// Redis is the store the run provisioned (nil when no target needs one).
func (h *Harness) Redis() *redisenv.Redis { return h.run.redis }

// kindOf is the operation a checked call's name says: AllowRequest or
// GetRemainingRequests.
func kindOf(name string) model.OpKind {
	if name == "GetRemainingRequests" {
		return model.OpRemaining
	}
	return model.OpAllow
}

// countUndecided counts an undecided judgement, for cause, of calls that
// spanned span.
func (h *Harness) countUndecided(cause model.Cause, span time.Duration) {
	h.undecided++
	if h.undecidedBy == nil {
		h.undecidedBy = map[model.Cause]int{}
	}
	h.undecidedBy[cause]++
	h.widest = max(h.widest, span)
}
