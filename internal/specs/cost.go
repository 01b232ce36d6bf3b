package specs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// costSpecs grade weighted requests (contract.CostLimiter): run where the
// target declares Capabilities.Cost, skipped with the reason otherwise.
func costSpecs() []engine.Spec {
	cost := []engine.Need{engine.NeedCost}
	return []engine.Spec{
		{ID: "strict/cost-all-or-nothing", Level: result.Strict, Needs: cost, MinDecided: 2,
			Rule:    "a request of cost n is allowed only when n more fit (active + n <= N), and then counts n times; refused, it counts nothing",
			General: "a request of cost n is decided as a whole, as the profile's rule for weighted requests says (allowed only when n more fit; under cost=debt, whenever one would be), and then counts n times; refused, it counts nothing (or what the profile counts of a denied request)",
			Run:     costAllOrNothing,
			Hint:    "decide a weighted request as a whole: compare active + n with N before writing, then log n entries, each under a member of its own (a ZSET keeps one entry per member); never admit the part that fits, and log nothing for a refused request"},
		{ID: "strict/cost-expiry-edge", Level: result.Strict, Needs: cost, MinDecided: 2,
			Rule:    "the n entries of a weighted request all stop counting at exactly s+W, not one earlier",
			General: "the quota a weighted request took comes back when the profile says, not a millisecond earlier",
			Run:     costExpiryEdge,
			Hint:    "log all n entries of a weighted request at its own instant s (a unique member each, one score): shifting members' scores to keep them unique makes some leave before s+W"},
		{ID: "strict/cost-never-fit", Level: result.Strict, Needs: cost, MinDecided: 1,
			Rule:            "a request whose cost can never fit (above N, or above a bucket's burst) is refused, or answered as invalid input, never allowed",
			General:         "a request above what a full quota holds is decided as the profile's rule for weighted requests says: where it can never fit (above N, a burst or a capacity), refused or answered as invalid input, never allowed; under cost=debt, allowed while nothing is owed, its whole cost then owed",
			Run:             costNeverFit,
			Hint:            "compare the cost with what a full quota holds: a request above it must be denied (or return contract.ErrInvalidCost; over HTTP, 400), not admitted in part nor clamped to the limit; a limiter that lets any cost through while nothing is owed, and charges it to the next requests, is graded with cost=debt",
			HintAllProfiles: true},
		{ID: "strict/cost-zero", Level: result.Strict, Needs: cost, MinDecided: 1,
			Rule:            "a request of cost 0 consumes nothing (its answer, or ErrInvalidCost, is not graded)",
			Run:             costZero,
			Hint:            "a request of cost 0 must log nothing and count nothing: a loop that logs at least one entry, or a counter incremented before the cost is read, spends quota the caller never asked for",
			HintAllProfiles: true},
		{ID: "strict/cost-concurrent", Level: result.Strict, Needs: []engine.Need{engine.NeedCost, engine.NeedUsers, engine.NeedConfigure}, MinDecided: 1,
			Rule:            "weighted requests from 4 goroutines over two instances (with a shared store), all four at once on a fresh user and then of random costs, are linearizable against the model: never more than N units allowed, none refused that a serial order would allow",
			General:         "weighted requests from 4 goroutines over two instances (with a shared store), all four at once on a fresh user and then of random costs, are linearizable against the profile's model",
			Run:             costConcurrent,
			Hint:            "decide a weighted request in one atomic step in the shared store: a count read in one round trip and n entries added in another let two requests spend the same quota; open the visualisation to see the operations no serial order explains",
			HintAllProfiles: true},
		{ID: "strict/cost-differential", Level: result.Strict, Needs: []engine.Need{engine.NeedCost, engine.NeedUsers, engine.NeedConfigure, engine.NeedRemaining, engine.NeedReset},
			Rule:            "random schedules of weighted requests of random costs (with unit requests, remaining, resets, clock steps onto edges) answer as the model does",
			General:         "random schedules of weighted requests of random costs (with unit requests, remaining, resets, clock steps onto the profile's edges) answer as the profile's model does",
			Run:             costDifferential,
			Hint:            "replay the shrunk schedule above against your limiter; the first wrong answer is the bug",
			HintAllProfiles: true},
		{ID: "robust/cost-negative", Level: result.Robust, Needs: cost,
			Rule:            "a negative cost is an error wrapping ErrInvalidCost and changes nothing",
			Run:             costNegative,
			Hint:            "validate the cost before touching the store: a negative one returns contract.ErrInvalidCost (over HTTP: 400); INCRBY or ZREM with it would refund quota",
			HintAllProfiles: true},
	}
}

// costLimit is the limit the cost specs configure: room for weighted
// requests of several sizes.
const costLimit = 6

// costAllOrNothing fills a user's quota with weighted requests: one that
// fits, one that only partly fits (refused whole), one that exactly fills
// what is left; and a fresh user's request of the whole limit.
func costAllOrNothing(h *engine.Harness) {
	u, v := h.User("u"), h.User("v")
	h.Origin()
	costConfigure(h, costLimit)
	h.AllowN(u, 4)
	h.AllowN(u, 3) // two fit: refused whole
	queryIf(h, u)
	h.AllowN(u, 2)
	queryIf(h, u)
	h.Allow(u)
	full := min(costLimit, h.MaxFit())
	h.AllowN(v, full)
	queryIf(h, v)
	h.Allow(v)
}

// costExpiryEdge spends the limit in two weighted requests half a window
// apart, and looks just before and at each one's edge.
func costExpiryEdge(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	costConfigure(h, costLimit)
	h.AllowN(u, 3)
	h.At(h.W() / 2)
	h.AllowN(u, 3)
	h.Before(h.W())
	h.AllowN(u, 1)
	h.After(h.W())
	h.AllowN(u, 4)
	h.AllowN(u, 3)
	h.Before(h.W() * 3 / 2)
	h.AllowN(u, 1)
	h.After(h.W() * 3 / 2)
	h.AllowN(u, 3)
	queryIf(h, u)
}

// costNeverFit sends requests above what a full quota holds to a fresh
// user and to one with history, each decided as the profile's model says:
// where such a cost can never fit, denied or answered as invalid input
// (engine.InvalidCostHonest), never allowed; under cost=debt, allowed
// while nothing is owed (the bound is the model's: engine.Bound).
func costNeverFit(h *engine.Harness) {
	costConfigure(h, costLimit)
	most := h.MaxFit()
	h.AllowN(h.User("fresh"), most+1)
	busy := h.User("busy")
	h.Allow(busy)
	h.AllowN(busy, most+1)
	h.Allow(busy)
	h.AllowN(h.User("far"), 10*most)
}

// costZero sends requests of cost 0 to a user with one request left, to
// one with none, and to a fresh one; the calls after them prove that they
// consumed nothing.
func costZero(h *engine.Harness) {
	u, v := h.User("u"), h.User("v")
	h.Origin()
	costConfigure(h, 3)
	h.Allow(u)
	h.Allow(u)
	for range 3 {
		h.AllowZero(u)
	}
	queryIf(h, u)
	h.Allow(u)
	h.AllowZero(u)
	h.Allow(u)
	h.AllowZero(v)
	queryIf(h, v)
	h.AllowN(v, min(3, h.MaxFit()))
}

// costNegative sends a negative cost to a user that has spent its quota:
// an error wrapping ErrInvalidCost, and the user still has none.
func costNegative(h *engine.Harness) {
	u := h.User("u")
	h.Origin()
	costConfigure(h, 3)
	for range 3 {
		h.Allow(u)
	}
	op := fmt.Sprintf("AllowRequestN(%s, -2)", h.Short(u))
	ok, err := h.CostInstance(0).AllowRequestN(h.Context(), u, -2)
	h.Note(op, errWord(err, engine.AllowedWord(ok)))
	if errors.Is(err, errors.ErrUnsupported) {
		h.Skipf("the target's protocol carries no negative cost, so it never reaches the target: not graded (%s: %v)", op, err)
	}
	if ok || err == nil {
		h.Failf("%s = %s, %v; want denied and an error wrapping ErrInvalidCost (a negative cost is invalid input)", op, engine.AllowedWord(ok), err)
	}
	wantSentinel(h, op, err, contract.ErrInvalidCost)
	queryIf(h, u)
	h.Allow(u)
}

// costConfigure configures a limit of n for a cost spec, when the target
// takes a configuration; one that does not (an RLS server, with its
// policy given) is graded at its own limit, h.N(), the model deciding
// what each weighted request should get.
func costConfigure(h *engine.Harness, n int) {
	if h.Target().Capabilities.Configure {
		h.Configure(n, h.W())
	}
}

// queryIf checks what remains for u when the target reports it.
func queryIf(h *engine.Harness, u string) {
	if h.Target().Capabilities.Remaining {
		h.Remaining(u)
	}
}

// drawCost draws a differential allow: with maxCost 0 a unit request;
// otherwise a weighted one of cost 1 to maxCost most of the time, of cost
// 0 now and then, and a unit AllowRequest a quarter of the time.
func drawCost(rng *rand.Rand, maxCost int) (weighted bool, cost int) {
	switch r := rng.IntN(8); {
	case maxCost == 0 || r < 2:
		return false, 1
	case r < 3:
		return true, 0
	}
	return true, 1 + rng.IntN(maxCost)
}

// allowCost decides an allow of a schedule on m: a weighted request of
// cost, or a unit AllowRequest.
func allowCost(m model.Profile, now time.Time, user string, weighted bool, cost int) (bool, error) {
	if weighted {
		return model.AllowN(m, now, user, cost)
	}
	return m.Allow(now, user)
}

// allowOf sends an allow of a schedule to lim.
func allowOf(h *engine.Harness, lim contract.RateLimiterContract, user string, weighted bool, cost int) (bool, error) {
	if weighted {
		return lim.(contract.CostLimiter).AllowRequestN(h.Context(), user, cost)
	}
	return lim.AllowRequest(h.Context(), user)
}

// traceCost is an allow's cost in a trace (0: AllowRequest).
func traceCost(o dop) int {
	if o.weighted {
		return o.cost
	}
	return 0
}
