package engine

import (
	"errors"
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
// it against the profile's rule for weighted requests.
func (h *Harness) AllowNOn(i int, user string, n int) bool {
	return h.allowN(i, user, n, false)
}

// AllowNeverFit sends AllowRequestN(user, n) for an n that can never fit
// (above the limit, or above a bucket's burst) and checks that it is not
// allowed: denied, or refused as invalid input (ErrInvalidCost), are both
// honest. The profile's model counts it as a denied request; where the
// profile counts denied requests and the limiter refused it as invalid,
// the two then differ, so a spec sends it to a user of its own and asks
// nothing more of that user.
func (h *Harness) AllowNeverFit(user string, n int) bool {
	return h.allowN(0, user, n, true)
}

func (h *Harness) allowN(i int, user string, n int, neverFit bool) bool {
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
			if neverFit && errors.Is(err, contract.ErrInvalidCost) {
				return InvalidCostWord, nil // judged as a denial
			}
			return AllowedWord(ok), err
		})
	return got == AllowedWord(true)
}

// AllowZero sends AllowRequestN(user, 0), which consumes nothing, and
// records its answer without judging it: some limiters allow a request of
// no cost, some answer whether one more would fit. The calls after it
// prove that it consumed nothing. An error fails the spec: 0 is a valid
// cost. On the fake clock the profile's models take it too: where a
// query writes, a request of no cost is the query (model.Weighted).
func (h *Harness) AllowZero(user string) {
	lim := h.Instance(0).(guarded)
	now := h.Now()
	op := h.opName(opAllowN, user, 0)
	if h.fake != nil {
		h.readings.Answers(user, now, func(m model.Replayable) string {
			model.AllowN(m, now, user, 0)
			return ""
		})
	}
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
	h.Record(0, now, op, AllowedWord(ok)+" (not graded)")
}
