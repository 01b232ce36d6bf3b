package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
)

// opAllowN names a weighted request in timelines and traces.
const opAllowN = "AllowRequestN"

// errNoCost marks a target that declares Capabilities.Cost and makes an
// instance that takes no cost: a fault of the target's declaration, not
// an answer of its limiter.
var errNoCost = errors.New("the target declares Capabilities.Cost, but its limiter takes no cost")

// InvalidCostWord is how a request refused as invalid input (an error
// wrapping contract.ErrInvalidCost) shows in a timeline.
const InvalidCostWord = "invalid cost"

// allowCost decides a request of cost on m (0 and 1: a unit request).
// A model that states no rule for weighted requests decides a unit one.
func allowCost(m interface {
	Allow(time.Time, string) (bool, error)
}, now time.Time, user string, cost int) (bool, error) {
	if w, ok := m.(model.Weighted); ok && cost > 1 {
		return w.AllowN(now, user, cost)
	}
	return m.Allow(now, user)
}

// CostInstance is instance i as a limiter of weighted requests, for a
// spec that needs the capability (NeedCost).
func (h *Harness) CostInstance(i int) contract.CostLimiter {
	return h.Instance(i).(guarded)
}

// AllowN sends AllowRequestN(user, n) to instance 0 and checks it.
func (h *Harness) AllowN(user string, n int) bool { return h.AllowNOn(0, user, n) }

// AllowNOn sends AllowRequestN(user, n), n >= 1, to instance i and checks
// it against the profile's rule for weighted requests. An error wrapping
// contract.ErrInvalidCost is judged by invalidCost: honest for a cost
// that can never fit under the configuration in force (it then counts as
// a denial that changes nothing), wrong for one that fits.
func (h *Harness) AllowNOn(i int, user string, n int) bool {
	got := h.checkedCost(i, opAllowN, user, n,
		func(m Model, now time.Time) string {
			w, ok := m.(model.Weighted)
			if !ok {
				h.Fault("profile %s states no rule for weighted requests (its model is not model.Weighted)", h.Profile())
			}
			ok, _ = w.AllowN(now, user, n)
			return AllowedWord(ok)
		},
		func(lim contract.RateLimiterContract) (string, error) {
			ok, err := lim.(guarded).AllowRequestN(h.ctx, user, n)
			if errors.Is(err, contract.ErrInvalidCost) {
				return InvalidCostWord, nil // judged by invalidCost
			}
			return AllowedWord(ok), err
		})
	return got == AllowedWord(true)
}

// MaxFit is the largest cost profile p ever admits under the
// configuration (n, w): what a fresh user's full quota holds (N, or a
// bucket's burst), found on fresh models. A request of a higher cost can
// never fit. It fails when p's model refuses (n, w) or states no rule for
// weighted requests.
func MaxFit(p model.Variant, n int, w time.Duration) (int, error) {
	var failed error
	fits := func(cost int) bool {
		m, err := p.New(n, w)
		if err != nil {
			failed = fmt.Errorf("the model of %s refused Configure(%d, %v): %w", p, n, w, err)
			return false
		}
		wm, ok := m.(model.Weighted)
		if !ok {
			failed = fmt.Errorf("profile %s states no rule for weighted requests (its model is not model.Weighted)", p)
			return false
		}
		ok, _ = wm.AllowN(FakeStart.Add(time.Hour), "probe", cost)
		return ok
	}
	lo, hi := 0, 1 // fits(lo); find a hi that does not
	for fits(hi) && hi < contract.MaxLimit/2 {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 && failed == nil {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if failed != nil {
		return 0, failed
	}
	return lo, nil
}

// InvalidCostHonest reports whether an error wrapping
// contract.ErrInvalidCost is an honest answer to a request of cost (0 or
// more) where most is the largest cost that ever fits (MaxFit): to a cost
// of 0 (strict/cost-zero: Guava's tryAcquire(0) throws) and to one that
// can never fit (strict/cost-never-fit: Symfony's limiters throw for more
// tokens than the limit). Every spec that judges weighted requests one
// by one follows it (strict/cost-concurrent takes any error as an
// unknown outcome). Such an answer admits nothing and changes nothing: a
// grader applies it to no model, oracle or trace. To a cost that fits, it
// is a wrong answer.
func InvalidCostHonest(cost, most int) bool { return cost == 0 || cost > most }

// MaxFit is MaxFit of the profile graded under the configuration in
// force; the spec ends as a fault of the grader when its model has none.
func (h *Harness) MaxFit() int { return h.MaxFitUnder(h.N(), h.W()) }

// InvalidCostHonestUnder is InvalidCostHonest for a request of cost under
// the configuration (n, w) of the profile graded, for a spec that follows
// a configuration of its own (the differential's replays).
func (h *Harness) InvalidCostHonestUnder(n int, w time.Duration, cost int) bool {
	return cost == 0 || InvalidCostHonest(cost, h.MaxFitUnder(n, w))
}

// MaxFitUnder is MaxFit of the profile graded under the configuration
// (n, w); the spec ends as a fault of the grader when its model has none.
func (h *Harness) MaxFitUnder(n int, w time.Duration) int {
	most, err := MaxFit(h.Profile(), n, w)
	if err != nil {
		h.Fault("the largest cost that fits: %v", err)
	}
	return most
}

// invalidCost judges an error wrapping contract.ErrInvalidCost, the
// answer of instance i to op (AllowRequestN(user, cost)) sent at at and,
// in real time, answered at until (zero on the fake clock). Honest
// (InvalidCostHonest under the configuration in force), it is recorded
// and counted as decided, and changes nothing: no model, oracle or trace
// sees it. Otherwise the spec fails at it: want says what the profile
// answers instead (on a copy of its model: the answer changed nothing).
func (h *Harness) invalidCost(i int, at, until time.Time, op, user string, cost int, want func() string) {
	e := Event{At: at.Sub(h.start), inst: i, Op: op, User: h.Short(user), Got: InvalidCostWord}
	if !until.IsZero() {
		e.Until = until.Sub(h.start)
	}
	most := h.MaxFit()
	if InvalidCostHonest(cost, most) {
		e.Want = AllowedWord(false) + " or " + InvalidCostWord
		h.record(e)
		h.decided++
		return
	}
	e.Want = want()
	h.record(e)
	h.FailStep(i, at, op, InvalidCostWord, e.Want, fmt.Sprintf(
		"an error wrapping ErrInvalidCost answers only a cost that can never fit (above %d, what a full quota holds under Configure(%d, %v)) or a cost of 0; a cost of %d fits, and must be decided",
		most, h.N(), h.W(), cost), nil)
}

// AllowZero sends AllowRequestN(user, 0), which consumes nothing, and
// records its answer without judging it: some limiters allow a request of
// no cost, some answer whether one more would fit. The calls after it
// prove that it consumed nothing. An error fails the spec, but one
// wrapping ErrInvalidCost (InvalidCostHonest): 0 is a valid cost. On the
// fake clock the profile's models take an answered one too: where a
// query writes, a request of no cost is the query (model.Weighted); a
// refused one changes nothing, in the models neither.
func (h *Harness) AllowZero(user string) {
	lim := h.Instance(0).(guarded)
	now := h.Now()
	op := h.opName(opAllowN, user, 0)
	ok, err := lim.AllowRequestN(h.ctx, user, 0)
	if errors.Is(err, contract.ErrInvalidCost) {
		// Refused as invalid input (Guava's tryAcquire(0) throws), which
		// consumes nothing: as honest as an answer.
		h.Record(0, now, op, "invalid cost (not graded)")
		return
	}
	if err != nil {
		h.Record(0, now, op, "error")
		h.FailStep(0, now, op, "", "an answer or ErrInvalidCost (a cost of 0 consumes nothing)", "", err)
	}
	if h.fake != nil {
		h.readings.Answers(user, now, func(m model.Replayable) string {
			model.AllowN(m, now, user, 0)
			return ""
		})
	}
	h.Record(0, now, op, AllowedWord(ok)+" (not graded)")
}
