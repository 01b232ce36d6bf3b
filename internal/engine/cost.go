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

// CostBound is what profile p says of weighted requests under one
// configuration, found on fresh models ([Bound]).
type CostBound struct {
	// Full is what a fresh user's full quota holds (N, a burst B, a
	// capacity C): the largest cost it is allowed whole, or under a
	// profile that runs into debt, how many unit requests it is allowed.
	Full int
	// Debt says that a cost above Full may be allowed too: a fresh user
	// is allowed a cost above contract.MaxLimit, more than any limit,
	// burst or capacity holds (cost=debt: any cost while nothing is
	// owed). No cost then can never fit.
	Debt bool
}

// NeverFits reports whether a request of cost can never be allowed.
func (b CostBound) NeverFits(cost int) bool { return !b.Debt && cost > b.Full }

// Bound is what profile p says of weighted requests under the
// configuration (n, w): what a fresh user's full quota holds, and whether
// a cost above it can ever fit, found on fresh models. It fails when p's
// model refuses (n, w) or states no rule for weighted requests.
func Bound(p model.Variant, n int, w time.Duration) (CostBound, error) {
	var failed error
	fresh := func() model.Replayable {
		m, err := p.New(n, w)
		if err != nil {
			failed = fmt.Errorf("the model of %s refused Configure(%d, %v): %w", p, n, w, err)
			return nil
		}
		if _, ok := m.(model.Weighted); !ok {
			failed = fmt.Errorf("profile %s states no rule for weighted requests (its model is not model.Weighted)", p)
			return nil
		}
		return m
	}
	at := FakeStart.Add(time.Hour)
	fits := func(cost int) bool {
		m := fresh()
		if m == nil {
			return false
		}
		ok, _ := m.(model.Weighted).AllowN(at, "probe", cost)
		return ok
	}
	if fits(contract.MaxLimit + 1) {
		full, _ := fresh().Remaining(at, "probe")
		return CostBound{Full: full, Debt: true}, nil
	}
	most := maxFit(fits)
	if failed != nil {
		return CostBound{}, failed
	}
	return CostBound{Full: most}, nil
}

// MaxFit is what a fresh user's full quota holds under profile p and
// the configuration (n, w) (N, or a bucket's burst): Bound's Full.
func MaxFit(p model.Variant, n int, w time.Duration) (int, error) {
	b, err := Bound(p, n, w)
	return b.Full, err
}

// maxFit is the largest cost fits admits, by bisection; fits(0) holds,
// and fits holds for every cost below one it holds for.
func maxFit(fits func(int) bool) int {
	lo, hi := 0, 1 // fits(lo); find a hi that does not
	for fits(hi) && hi < contract.MaxLimit/2 {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// InvalidCostHonest reports whether an error wrapping
// contract.ErrInvalidCost is an honest answer to a request of cost (0 or
// more) under the bound b of the profile graded (Bound): to a cost of 0
// (strict/cost-zero: Guava's tryAcquire(0) throws) and to one that can
// never fit (strict/cost-never-fit: Symfony's limiters throw for more
// tokens than the limit; under a profile that runs into debt, none).
// Every spec that judges weighted requests one by one follows it
// (strict/cost-concurrent takes any error as an unknown outcome). Such
// an answer admits nothing and changes nothing: a grader applies it to no
// model, oracle or trace. To a cost that fits, it is a wrong answer.
func InvalidCostHonest(cost int, b CostBound) bool { return cost == 0 || b.NeverFits(cost) }

// Fits says, for a failure message, which costs fit under b and the
// configuration (n, w): every cost above 0 under a profile that runs into
// debt, else up to what a full quota holds.
func (b CostBound) Fits(n int, w time.Duration) string {
	if b.Debt {
		return fmt.Sprintf("under Configure(%d, %v) this profile allows a request of any cost while nothing is owed (cost=debt): no cost but 0 is invalid", n, w)
	}
	return fmt.Sprintf("only a cost above %d, what a full quota holds under Configure(%d, %v), can never fit", b.Full, n, w)
}

// MaxFit is what a full quota holds (Bound's Full) under the profile
// graded and the configuration in force; the spec ends as a fault of the
// grader when its model has none.
func (h *Harness) MaxFit() int { return h.BoundUnder(h.N(), h.W()).Full }

// MaxFitUnder is MaxFit under the configuration (n, w).
func (h *Harness) MaxFitUnder(n int, w time.Duration) int { return h.BoundUnder(n, w).Full }

// InvalidCostHonestUnder is InvalidCostHonest for a request of cost under
// the configuration (n, w) of the profile graded, for a spec that follows
// a configuration of its own (the differential's replays).
func (h *Harness) InvalidCostHonestUnder(n int, w time.Duration, cost int) bool {
	return cost == 0 || InvalidCostHonest(cost, h.BoundUnder(n, w))
}

// BoundUnder is Bound of the profile graded under the configuration
// (n, w); the spec ends as a fault of the grader when its model has none.
func (h *Harness) BoundUnder(n int, w time.Duration) CostBound {
	b, err := Bound(h.Profile(), n, w)
	if err != nil {
		h.Fault("the largest cost that fits: %v", err)
	}
	return b
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
	b := h.BoundUnder(h.N(), h.W())
	if InvalidCostHonest(cost, b) {
		e.Want = AllowedWord(false) + " or " + InvalidCostWord
		h.record(e)
		h.decided++
		return
	}
	e.Want = want()
	h.record(e)
	h.FailStep(i, at, op, InvalidCostWord, e.Want, fmt.Sprintf(
		"an error wrapping ErrInvalidCost answers only a cost that can never fit, or a cost of 0: %s; a cost of %d fits, and must be decided",
		b.Fits(h.N(), h.W()), cost), nil)
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
	if errors.Is(err, errors.ErrUnsupported) {
		// The target's protocol cannot carry a cost of 0 (an RLS
		// server's hits_addend 0 means 1): it never reaches the target.
		h.Record(0, now, op, "not sent")
		h.Skipf("the target's protocol carries no cost of 0, so it never reaches the target: not graded (%s: %v)", op, err)
	}
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
