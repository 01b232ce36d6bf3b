package specs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// dop is one operation of a differential schedule.
type dop struct {
	kind     model.OpKind  // OpAdvance: the clock moves on by advance
	user     int           // index into the schedule's users
	weighted bool          // allow: AllowRequestN(cost), not AllowRequest
	cost     int           // allow: a weighted request's cost
	n        int           // configure: the new limit
	w        time.Duration // configure: the new window
	advance  time.Duration // advance: how far
}

func (o dop) String() string {
	switch o.kind {
	case model.OpAllow:
		if o.weighted {
			return fmt.Sprintf("AllowRequestN(u%d, %d)", o.user, o.cost)
		}
		return fmt.Sprintf("AllowRequest(u%d)", o.user)
	case model.OpRemaining:
		return fmt.Sprintf("GetRemainingRequests(u%d)", o.user)
	case model.OpReset:
		return fmt.Sprintf("Reset(u%d)", o.user)
	case model.OpConfigure:
		return fmt.Sprintf("Configure(%d, %v)", o.n, o.w)
	}
	return fmt.Sprintf("advance %dms", o.advance.Milliseconds())
}

const (
	diffSchedules = 12
	diffOps       = 200
	diffUsers     = 3
	shrinkBudget  = 1500 // replays spent on shrinking a failure
)

// differential runs seeded random schedules on the target and the model;
// the first divergence is shrunk to a minimal schedule and reported with the
// seed that reproduces it.
func differential(h *engine.Harness) { differentialOf(h, 0) }

// costDifferential is differential with weighted requests among the
// allows, of random costs up to what a full quota holds, or under a
// profile that runs into debt (cost=debt) up to twice that and one more:
// debts of more than a whole quota.
func costDifferential(h *engine.Harness) {
	b := h.BoundUnder(h.N(), h.W())
	if b.Debt {
		differentialOf(h, 2*b.Full+1)
		return
	}
	differentialOf(h, b.Full)
}

// differentialOf runs the differential's schedules, whose allows are
// weighted requests of random costs from 0 to maxCost when maxCost > 0.
func differentialOf(h *engine.Harness, maxCost int) {
	if h.RealTime() {
		differentialRealTime(h, maxCost)
		return
	}
	for i := range diffSchedules {
		ops := genSchedule(h, diffOps, maxCost)
		if bad, _ := replay(h, ops, fmt.Sprintf("s%d.", i), false); bad < 0 {
			continue
		}
		min := shrink(h, ops)
		h.ResetTimeline()
		h.SetDivergence(result.Failure{})
		h.ShrunkFrom(len(ops))
		bad, why := replay(h, min, "min.", true)
		if bad < 0 {
			h.Failf("schedule %d diverged from the model, but its shrunk form did not on replay (a flaky target?); seed %d", i, h.Seed())
		}
		h.FailWith(h.Divergence(), fmt.Sprintf("%s (schedule %d of seed %d, shrunk from %d to %d operations)\n"+
			"  reproduce with seed %d (Config.Seed, -rlconform.seed under go test, or rlconform run --seed)",
			why, i, h.Seed(), len(ops), len(min), h.Seed()))
	}
}

// genSchedule draws a schedule. Clock steps land exactly on an entry's edge
// (s+W, or s+W-1) often, since that is where limiters go wrong.
//
// Configurations change the limit and the window: lowered windows, and
// raised ones only when no entry ever allowed lies in (t-Wnew, t-Wold],
// since whether entries that had left the old window come back is not
// promised.
func genSchedule(h *engine.Harness, n, maxCost int) []dop {
	sim := newSim(h)
	var windows []time.Duration
	for _, w := range []time.Duration{h.W(), h.W() / 2, h.W() / 4, 2 * h.W()} {
		if h.TakesWindow(w) {
			windows = append(windows, w)
		}
	}
	if len(windows) == 0 {
		windows = []time.Duration{h.W()} // refused: the spec ends inconclusive, saying so
	}
	if !h.Profile().IsSlidingLog() {
		// Other profiles change the limit only: their readings of a
		// change are graded by core/reconfigure and strict/lowered-limit
		// and raised-limit, where a user's history is set up to tell them
		// apart; random schedules would leave most answers after a change
		// undecided (a reading not modelled may give them).
		windows = []time.Duration{h.W()}
	}
	changes := h.Profile().IsSlidingLog()
	if alg := h.Profile().Algorithm(); alg != nil {
		changes = alg.GradesLimitChange // a limit change keeps counts, and compares them with the new N
	}
	var ops []dop
	for len(ops) < n {
		u := h.Rand().IntN(diffUsers)
		w := sim.m.Window()
		var o dop
		switch r := h.Rand().IntN(100); {
		case r < 25 && sim.fresh(u):
			// A query of a user with no state is where profiles differ
			// on what a query writes (query=write opens a window): half
			// of a fresh user's requests are a query first.
			o = dop{kind: model.OpRemaining, user: u}
		case r < 50:
			o = dop{kind: model.OpAllow, user: u}
			o.weighted, o.cost = drawCost(h.Rand(), maxCost)
			if o.weighted && o.cost == 0 && h.Profile().FreeMayWrite() && !h.Profile().QueryWrites() {
				// Whether it opens a window is two honest readings
				// (model.TimedOp.Free), and one model is replayed at
				// a time: strict/cost-zero grades a cost of 0.
				o.cost = 1
			}
		case r < 62:
			o = dop{kind: model.OpRemaining, user: u}
		case r < 66:
			o = dop{kind: model.OpReset, user: u}
		case r < 70 && changes:
			o = dop{kind: model.OpConfigure, n: 1 + h.Rand().IntN(2*h.N()), w: windows[h.Rand().IntN(len(windows))]}
			if !sim.safe(o) {
				o.w = w
			}
		default:
			o = dop{kind: model.OpAdvance, advance: time.Duration(h.Rand().Int64N(int64(w/3/time.Millisecond))) * time.Millisecond}
			if edges := sim.edges(u); len(edges) > 0 && h.Rand().IntN(2) == 0 {
				edge := edges[h.Rand().IntN(len(edges))]
				if h.Rand().IntN(3) == 0 {
					edge = edge.Add(-time.Millisecond)
				}
				o.advance = max(0, edge.Sub(sim.now))
			}
		}
		sim.apply(o)
		ops = append(ops, o)
	}
	return ops
}

// sim follows a schedule on the model, with every instant each user was
// allowed at since its last reset, to keep window raises promised.
type sim struct {
	m       model.Profile
	now     time.Time
	allowed [][]time.Time
}

func newSim(h *engine.Harness) *sim {
	m, _ := h.Profile().New(h.Config().Limit, h.W())
	return &sim{m: m, now: engine.FakeStart, allowed: make([][]time.Time, diffUsers)}
}

// edges are instants where user u's answers change: for a log, each
// entry's s+W; otherwise when a request is next allowed and when the
// user's state is forgotten.
func (s *sim) edges(u int) []time.Time {
	user := "u" + strconv.Itoa(u)
	if log, ok := s.m.(engine.SlidingLogModel); ok {
		var out []time.Time
		for _, e := range log.Log(s.now, user) {
			out = append(out, e.Add(log.Window()))
		}
		return out
	}
	var out []time.Time
	for _, d := range []time.Duration{s.m.RetryAfter(s.now, user), s.m.Lifetime(s.now, user)} {
		if d > 0 {
			out = append(out, s.now.Add(d))
		}
	}
	return out
}

// fresh reports whether user u has no state that matters now: a request
// of it now would be its first.
func (s *sim) fresh(u int) bool {
	return s.m.Lifetime(s.now, "u"+strconv.Itoa(u)) <= 0
}

// safe reports whether o is not a raise of the window that the contract
// leaves unpromised: under the log, one that could bring back entries
// that had left the old window (under another profile, its readings of a
// change say what a raise does).
func (s *sim) safe(o dop) bool {
	if _, log := s.m.(engine.SlidingLogModel); !log {
		return true
	}
	return o.kind != model.OpConfigure || o.w <= s.m.Window() || safeRaise(s.allowed, s.now, s.m.Window(), o.w)
}

func (s *sim) apply(o dop) {
	switch o.kind {
	case model.OpAllow:
		if ok, _ := allowCost(s.m, s.now, "u"+strconv.Itoa(o.user), o.weighted, o.cost); ok {
			s.allowed[o.user] = append(s.allowed[o.user], s.now)
		}
	case model.OpReset:
		s.m.Reset("u" + strconv.Itoa(o.user))
		s.allowed[o.user] = nil
	case model.OpConfigure:
		s.m.Configure(s.now, o.n, o.w)
	case model.OpAdvance:
		s.now = s.now.Add(o.advance)
	}
}

// safeRaise reports whether raising the window from old to raised at now
// leaves no allowed entry in (now-raised, now-old].
func safeRaise(allowed [][]time.Time, now time.Time, old, raised time.Duration) bool {
	for _, log := range allowed {
		for _, s := range log {
			if s.After(now.Add(-raised)) && !s.After(now.Add(-old)) {
				return false
			}
		}
	}
	return true
}

// replay runs ops on instance 0 with users under a fresh tag and a fresh
// model, from a clock moved well past anything earlier replays wrote. It
// returns the index of the first divergence (-1 if none) and a description
// of it; with record it writes the spec's timeline.
func replay(h *engine.Harness, ops []dop, tag string, record bool) (int, string) {
	lim := h.Instance(0)
	// Start on an epoch-aligned window edge well past anything earlier
	// replays wrote, so a replay sees the same window edges every time.
	w := h.W().Milliseconds()
	h.FakeClock().Set(time.UnixMilli((h.Now().UnixMilli()/w + 2) * w))
	if err := configureAll(h, h.Config().Limit, h.W()); err != nil {
		// Not a divergence of the schedule: a valid Configure failed.
		h.FailWith(result.Failure{Kind: result.KindTargetError, Operation: fmt.Sprintf("Configure(%d, %v)", h.Config().Limit, h.W())},
			fmt.Sprintf("Configure(%d, %v) before replaying a schedule returned an error: %v", h.Config().Limit, h.W(), err))
	}
	base := h.Now()
	if record {
		h.SetStart(base) // the report counts from the schedule's start
		h.SetTrace(engine.TraceOp{At: base, Kind: model.OpConfigure, N: h.Config().Limit, W: h.W()})
	}
	rs, _ := model.NewReadings(h.Profile(), h.Config().Limit, h.W())
	users := make([]string, diffUsers)
	for i := range users {
		users[i] = h.User(tag + "u" + strconv.Itoa(i))
	}
	step := 0
	for i, o := range ops {
		if o.kind != model.OpAdvance {
			step++
		}
		now := h.Now()
		at := engine.FmtOffset(now.Sub(base))
		var got string
		wants := []string{"ok"}
		var err error
		switch o.kind {
		case model.OpAllow:
			var refused bool
			got, wants, refused, err = replayAllow(h, lim, rs, o, users[o.user], now)
			if refused { // invalid input, honestly: it changed nothing, and is not judged
				if record {
					h.AddEvent(engine.Event{At: now.Sub(base), Op: o.String(), Got: got, Want: refusedWant(o.cost), Limit: rs.Primary().Limit(), Window: rs.Primary().Window()})
				}
				continue
			}
		case model.OpRemaining:
			wants = rs.Answers(users[o.user], now, func(m model.Replayable) string { n, _ := m.Remaining(now, users[o.user]); return strconv.Itoa(n) })
			var n int
			n, err = lim.GetRemainingRequests(h.Context(), users[o.user])
			got = strconv.Itoa(n)
		case model.OpReset:
			rs.Reset(users[o.user])
			err = lim.Reset(h.Context(), users[o.user])
			got = "ok"
		case model.OpConfigure:
			_ = rs.Configure(now, o.n, o.w) // the schedule's configurations are valid
			err = configureAll(h, o.n, o.w)
			got = "ok"
		case model.OpAdvance:
			h.Advance(o.advance)
			continue
		}
		if errors.Is(err, contract.ErrNoAnswer) {
			h.NoAnswer(fmt.Sprintf("step %d at %s: %s", step, at, o), err)
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		invalid := got == engine.InvalidCostWord // to a cost that fits: wrong whatever the history
		if record {
			m := rs.Primary()
			h.AddEvent(engine.Event{At: now.Sub(base), Op: o.String(), Got: got, Want: strings.Join(slices.Compact(slices.Sorted(slices.Values(wants))), " or "),
				Limit: m.Limit(), Window: m.Window()})
			t := engine.TraceOp{At: now, Kind: o.kind, User: users[o.user], Got: got, N: o.n, W: o.w, Cost: traceCost(o)}
			if (!o.weighted || o.cost > 0) && !invalid { // cost 0 changes nothing, and its answer is not graded
				h.AddTrace(t)
			}
		}
		if o.kind == model.OpAllow && o.weighted && o.cost == 0 && err == nil {
			continue // a request of cost 0: its answer is not graded
		}
		if want := wants[0]; err != nil || invalid || rs.Keep(users[o.user], now, wants, got) == model.Wrong {
			d := result.Failure{Kind: result.KindWrongAnswer, Step: step, At: now.Sub(base), Operation: o.String(), Got: got, Want: want}
			if err != nil {
				d.Kind = result.KindTargetError
			}
			why := fmt.Sprintf("step %d at %s: %s = %s, want %s", step, at, o, got, want)
			if invalid {
				m := rs.Primary()
				d.Explanation = "an error wrapping ErrInvalidCost answers only a cost that can never fit, or a cost of 0: " + h.BoundUnder(m.Limit(), m.Window()).Fits(m.Limit(), m.Window())
				why += ": " + d.Explanation
			}
			h.SetDivergence(d)
			return i, why
		}
	}
	return -1, ""
}

// replayAllow sends o, an allow of a schedule, for user at now to lim,
// and returns its answer and the answers of the readings rs. An error
// wrapping ErrInvalidCost is the answer engine.InvalidCostWord (err nil);
// refused says that it is honest (engine.InvalidCostHonest under the
// configuration rs follows): it changed nothing, so no reading saw the
// request, and it is not judged. Otherwise the readings decide o.
func replayAllow(h *engine.Harness, lim contract.RateLimiterContract, rs *model.Readings, o dop, user string, now time.Time) (got string, wants []string, refused bool, err error) {
	ok, err := allowOf(h, lim, user, o.weighted, o.cost)
	got = engine.AllowedWord(ok)
	if o.weighted && errors.Is(err, contract.ErrInvalidCost) {
		if m := rs.Primary(); h.InvalidCostHonestUnder(m.Limit(), m.Window(), o.cost) {
			return engine.InvalidCostWord, nil, true, nil
		}
		got, err = engine.InvalidCostWord, nil
	}
	wants = rs.Answers(user, now, func(m model.Replayable) string {
		ok, _ := allowCost(m, now, user, o.weighted, o.cost)
		return engine.AllowedWord(ok)
	})
	return got, wants, false, err
}

// refusedWant is what a timeline shows as wanted of a request of cost
// answered, honestly, as invalid input.
func refusedWant(cost int) string {
	if cost == 0 {
		return "not graded (cost 0)"
	}
	return engine.AllowedWord(false) + " or " + engine.InvalidCostWord
}

// shrink removes operations one at a time, keeping each removal after which
// the schedule still diverges, until no single removal does or the budget is
// spent. Removing a clock step shifts every later operation earlier, which is
// what lets a long schedule fold into a short one.
func shrink(h *engine.Harness, ops []dop) []dop {
	budget := shrinkBudget
	if bad, _ := replay(h, ops, "k0.", false); bad >= 0 {
		ops = ops[:bad+1] // nothing after the divergence matters
	}
	// Shrinking also stops with a quarter of the spec's time left, so that a
	// slow target still gets its (less shrunk) failure reported.
	deadline, bounded := h.Context().Deadline()
	timeLeft := func() bool { return !bounded || time.Until(deadline) > h.Config().SpecTimeout/4 }
	for changed := true; changed && budget > 0 && timeLeft(); {
		changed = false
		for i := len(ops) - 1; i >= 0 && budget > 0 && timeLeft(); i-- {
			cand := append(append([]dop(nil), ops[:i]...), ops[i+1:]...)
			if !raisesSafe(h, cand) {
				continue // removing a step made a window raise unpromised
			}
			budget--
			if bad, _ := replay(h, cand, "k"+strconv.Itoa(budget)+".", false); bad >= 0 {
				ops, changed = cand[:bad+1], true
				if i > len(ops) {
					i = len(ops)
				}
			}
		}
	}
	return ops
}

// configureAll configures every instance, without the model or timeline.
func configureAll(h *engine.Harness, n int, w time.Duration) error {
	for _, l := range h.Instances(h.InstanceCount()) {
		if err := l.Configure(h.Context(), n, w); err != nil {
			return err
		}
	}
	return nil
}

// raisesSafe replays ops on the model alone and reports whether every raise
// of the window in them is one the contract promises (see safeRaise).
func raisesSafe(h *engine.Harness, ops []dop) bool {
	sim := newSim(h)
	for _, o := range ops {
		if !sim.safe(o) {
			return false
		}
		sim.apply(o)
	}
	return true
}

// Real-time schedules: several users at once, each with a short schedule of
// its own, judged by the interval oracle; no reconfiguration (it would
// touch every user at once). A failure is reported with the user's whole
// schedule (short enough to read: no shrinking at real speed).
const (
	rtDiffUsers = 6
	rtDiffOps   = 30
)

// rtVerdict is how one user's real-time schedule went.
type rtVerdict struct {
	user   string
	steps  []string
	failed string
	// unanswered is the call whose answer never came, which ended
	// the user's schedule undecided.
	unanswered error
	decided    int
	undecided  int
}

// differentialRealTime runs rtDiffUsers users' random schedules at once in
// real time, for targets without clock control, then counts their answers
// and reports each user whose schedule diverged from the model.
func differentialRealTime(h *engine.Harness, maxCost int) {
	lim := h.Instance(0)
	caps := h.Target().Capabilities
	costs := rtCosts{maxCost: maxCost} // what fits: no Configure comes
	if maxCost > 0 {
		costs.bound = h.BoundUnder(h.N(), h.W())
		costs.fits = costs.bound.Fits(h.N(), h.W())
	}
	h.Origin()
	results := make([]rtVerdict, rtDiffUsers)
	var wg sync.WaitGroup
	for k := range rtDiffUsers {
		seed := h.Rand().Uint64()
		u := h.User(fmt.Sprintf("rt%d", k))
		wg.Add(1)
		go func() {
			defer wg.Done()
			rtSchedule(h, lim, caps, u, seed, costs, &results[k])
		}()
	}
	wg.Wait()
	for _, v := range results {
		h.CountDecided(v.decided)
		h.CountUndecided(v.undecided)
		if v.unanswered != nil {
			h.CountUndecided(1)
		}
	}
	for _, v := range results {
		if v.failed != "" {
			h.Failf("the real-time schedule of %s diverged from the model: %s\n  its schedule (ms since the spec's start, each call from sending to answer):\n    %s\n  seed %d",
				h.Short(v.user), v.failed, strings.Join(v.steps, "\n    "), h.Seed())
		}
	}
	decided, undecided := h.Counts()
	h.Note(fmt.Sprintf("%d users × %d operations in real time", rtDiffUsers, rtDiffOps), fmt.Sprintf("%d answers decided, %d undecided", decided, undecided))
}

// rtCosts are the costs of a real-time schedule's weighted requests:
// drawn up to maxCost (0: none), with bound what the profile says fits
// (and fits, in words).
type rtCosts struct {
	maxCost int
	bound   engine.CostBound
	fits    string
}

// rtSchedule plays user u's random real-time schedule, seeded with seed, on
// lim, judging each answer as it comes with an interval oracle of the
// user's own, and records in v how it went. It stops at the first wrong
// answer, error or unanswered call: what follows could not be judged. An
// honest answer of invalid input (engine.InvalidCostHonest) is decided,
// and the oracle does not see it: it changed nothing.
func rtSchedule(h *engine.Harness, lim contract.RateLimiterContract, caps contract.Capabilities, u string, seed uint64, costs rtCosts, v *rtVerdict) {
	rng := engine.NewRand(seed)
	v.user = u
	oracle, _ := model.NewOracle(h.Profile(), h.N(), h.W())
	var entries []time.Time // when each allowed request was sent
	for range rtDiffOps {
		if h.Context().Err() != nil {
			return
		}
		sent := time.Now()
		op, name, called, err := rtCall(h, lim, caps, u, rng, costs.maxCost)
		if !called {
			rtPause(h, rng, entries)
			continue
		}
		returned := time.Now()
		if op.Kind == model.OpReset {
			entries = nil
		}
		op.User, op.Lo, op.Hi = u, sent, returned
		got := rtAnswer(op)
		invalid := name == "AllowRequestN" && errors.Is(err, contract.ErrInvalidCost)
		if invalid {
			got, err = engine.InvalidCostWord, nil
		}
		if op.Kind == model.OpAllow && op.Allowed {
			entries = append(entries, sent)
		}
		call := name + "(" + h.Short(u) + ")"
		if name == "AllowRequestN" {
			call = fmt.Sprintf("%s(%s, %d)", name, h.Short(u), op.Cost)
		}
		step := fmt.Sprintf("%s…%s  %s = %s", engine.FmtOffset(sent.Sub(h.Started())), engine.FmtOffset(returned.Sub(h.Started())), call, got)
		if errors.Is(err, contract.ErrNoAnswer) {
			// Its outcome is unknown: the rest of this user's
			// schedule cannot be judged.
			v.steps = append(v.steps, step+" no answer: "+err.Error())
			v.unanswered = err
			return
		}
		if err != nil {
			v.steps = append(v.steps, step+" error: "+err.Error())
			v.failed = fmt.Sprintf("%s returned an error: %v", call, err)
			return
		}
		if invalid && !engine.InvalidCostHonest(op.Cost, costs.bound) {
			v.steps = append(v.steps, step)
			v.failed = fmt.Sprintf("step %d: %s = %s: an error wrapping ErrInvalidCost answers only a cost that can never fit, or a cost of 0: %s", len(v.steps), call, got, costs.fits)
			return
		}
		if name == "AllowRequestN" && op.Cost == 0 {
			// Not graded, but it may have opened a window (see
			// model.TimedOp.Free): the oracle follows both readings.
			op.Free = true
			_, _, _ = oracle.Judge(op)
			v.steps = append(v.steps, step+" (cost 0: not graded)")
			continue
		}
		if invalid { // honest: it changed nothing
			v.steps = append(v.steps, step)
			v.decided++
			continue
		}
		v.steps = append(v.steps, step)
		switch j, why, _ := oracle.Judge(op); j {
		case model.Impossible:
			v.failed = fmt.Sprintf("step %d: %s = %s: %s", len(v.steps), call, got, why)
			return
		case model.Undecided:
			v.undecided++
		default:
			v.decided++
		}
	}
}

// rtCall makes on lim the call for user u that rng picks: an allow half
// the time (weighted ones of random costs up to maxCost when it is not
// 0: see drawCost), now and then GetRemainingRequests or Reset
// when the target has them. op is the call without its user and interval,
// name the method's; called is false when r picks a pause instead.
func rtCall(h *engine.Harness, lim contract.RateLimiterContract, caps contract.Capabilities, u string, rng *rand.Rand, maxCost int) (op model.TimedOp, name string, called bool, err error) {
	switch r := rng.IntN(100); {
	case r < 50:
		op.Kind = model.OpAllow
		weighted, cost := drawCost(rng, maxCost)
		if !weighted {
			op.Allowed, err = lim.AllowRequest(h.Context(), u)
			return op, "AllowRequest", true, err
		}
		if cost == 0 && h.Profile().QueryWrites() {
			// A request of no cost is then the query, which writes:
			// the oracle cannot take an answer it does not judge.
			cost = 1
		}
		op.Cost = cost
		op.Allowed, err = allowOf(h, lim, u, true, cost)
		return op, "AllowRequestN", true, err
	case r < 65 && caps.Remaining:
		op.Kind = model.OpRemaining
		op.Remaining, err = lim.GetRemainingRequests(h.Context(), u)
		return op, "GetRemainingRequests", true, err
	case r < 70 && caps.Reset:
		op.Kind = model.OpReset
		err = lim.Reset(h.Context(), u)
		return op, "Reset", true, err
	}
	return op, "", false, nil
}

// rtPause waits a random while, up to a third of the window and often
// until just before or just after the instant one of entries (the sending
// of an allowed request) leaves the window, where wrong limiters show. It
// returns early when the spec ends.
func rtPause(h *engine.Harness, rng *rand.Rand, entries []time.Time) {
	d := time.Duration(rng.Int64N(int64(h.W() / 3)))
	if len(entries) > 0 && rng.IntN(2) == 0 {
		edge := entries[rng.IntN(len(entries))].Add(h.W())
		if rng.IntN(2) == 0 {
			edge = edge.Add(-h.Edge())
		} else {
			edge = edge.Add(h.Edge())
		}
		d = time.Until(edge)
	}
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-h.Context().Done():
		}
		t.Stop()
	}
}

// rtAnswer is op's answer as a step of a schedule shows it.
func rtAnswer(op model.TimedOp) string {
	switch op.Kind {
	case model.OpAllow:
		return engine.AllowedWord(op.Allowed)
	case model.OpRemaining:
		return fmt.Sprint(op.Remaining)
	}
	return "ok"
}
