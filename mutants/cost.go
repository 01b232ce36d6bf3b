package mutants

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlconform/rlconform/contract"
)

// The weighted mutants take a cost per request (contract.CostLimiter):
// the ZSET log of zset.lua, whose unit requests are the sliding log's,
// with one fault of weighted requests each.

// weighted is a scripted ZSET limiter that takes weighted requests.
type weighted struct{ *scripted }

var _ contract.CostLimiter = weighted{}

// AllowRequestN implements [contract.CostLimiter]: a negative cost is
// refused with [contract.ErrInvalidCost] before the store is touched,
// except under cost-negative-refunds, which sends it to the script. Under
// cost-invalid-over-free, a cost above what is free now is refused with
// ErrInvalidCost too, after a query of its own.
func (l weighted) AllowRequestN(ctx context.Context, user string, n int) (bool, error) {
	if err := contract.ValidateCost(n); err != nil && !l.hasFault("cost-negative-refunds") {
		return false, fmt.Errorf("mutant: AllowRequestN: %w", err)
	}
	if l.hasFault("cost-invalid-over-free") && n > 0 {
		_, free, err := l.call(ctx, user, false, "")
		if err != nil {
			return false, err
		}
		if n > free {
			return false, fmt.Errorf("mutant: AllowRequestN: %w: cost %d, and %d free", contract.ErrInvalidCost, n, free)
		}
	}
	ok, _, err := l.call(ctx, user, true, strconv.Itoa(n))
	return ok, err
}

// hasFault reports whether the script runs with the fault name.
func (l weighted) hasFault(name string) bool {
	return strings.Contains(" "+l.mode+" ", " "+name+" ")
}

// costZset is the ZSET log with faults, taking weighted requests.
func costZset(s Store, faults string) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, faults)
	if err != nil {
		return nil, err
	}
	return weighted{l}, nil
}

// CostPartial admits the part of a weighted request that fits (min(n,
// free) entries) and answers allowed when any was logged. Caught by
// strict/cost-all-or-nothing and strict/cost-never-fit.
func CostPartial(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-partial")
}

// CostOneMember logs the n entries of a weighted request as one ZADD of
// one member at now: the ZSET keeps one entry, so a request of cost n
// counts once. Caught by strict/cost-all-or-nothing (and
// strict/cost-differential).
func CostOneMember(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-one-member")
}

// CostCheckOne checks that one more fits (active + 1 <= N), then logs n
// entries: a weighted request goes past the limit. Caught by
// strict/cost-all-or-nothing (and strict/cost-differential).
func CostCheckOne(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-check-one")
}

// CostRefusedConsumes logs the n entries of a refused weighted request
// anyway: a refusal spends quota. Caught by strict/cost-all-or-nothing.
func CostRefusedConsumes(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-refused-consumes")
}

// CostZeroConsumes logs one entry for a request of cost 0 (max(n, 1)), as
// a loop that logs at least once does. Caught by strict/cost-zero.
func CostZeroConsumes(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-zero-consumes")
}

// CostNegativeRefunds does not validate the cost: a negative one removes
// |n| of the user's oldest entries, a refund, and is allowed. Caught by
// robust/cost-negative.
func CostNegativeRefunds(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-negative-refunds")
}

// CostSpreadScores keeps the n entries of a weighted request unique by
// their scores (now, now-1, ..., now-(n-1)) instead of their members: all
// but one stop counting before s+W. Caught by strict/cost-expiry-edge.
func CostSpreadScores(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-spread-scores")
}

// CostNonAtomic decides a weighted request in separate round trips
// (prune and count, then one add per entry, as a loop over a unit add
// does), so concurrent weighted requests all pass the same check; its
// unit requests are atomic. Caught by strict/cost-concurrent.
func CostNonAtomic(s Store) (contract.RateLimiterContract, error) {
	l, err := newScripted(s, zsetScript, "")
	if err != nil {
		return nil, err
	}
	l.nonAtomicCost = true
	return weighted{l}, nil
}

// CostInvalidOverFree answers a weighted request that does not fit now
// (above what is free, not above what a full quota holds) as invalid
// input, an error wrapping [contract.ErrInvalidCost], instead of denying
// it: the contract takes that answer only for a cost that can never fit.
// Caught by strict/cost-all-or-nothing (and strict/cost-differential).
func CostInvalidOverFree(s Store) (contract.RateLimiterContract, error) {
	return costZset(s, "cost-invalid-over-free")
}

// costMutants lists the weighted mutants.
func costMutants() []Mutant {
	return []Mutant{
		{Name: "cost-partial", Breaks: "a weighted request is admitted in part: the entries that fit are logged, and it is answered allowed",
			CaughtBy: []string{"strict/cost-all-or-nothing", "strict/cost-never-fit"}, NeedsRedis: true, New: CostPartial, Weighted: true},
		{Name: "cost-one-member", Breaks: "the n entries of a weighted request are one ZADD of one member: it counts once",
			CaughtBy: []string{"strict/cost-all-or-nothing", "strict/cost-differential"}, NeedsRedis: true, New: CostOneMember, Weighted: true},
		{Name: "cost-check-one", Breaks: "a weighted request is allowed when one more fits (active + 1 <= N), then logs n",
			CaughtBy: []string{"strict/cost-all-or-nothing", "strict/cost-differential"}, NeedsRedis: true, New: CostCheckOne, Weighted: true},
		{Name: "cost-refused-consumes", Breaks: "a refused weighted request logs its n entries anyway",
			CaughtBy: []string{"strict/cost-all-or-nothing"}, NeedsRedis: true, New: CostRefusedConsumes, Weighted: true},
		{Name: "cost-zero-consumes", Breaks: "a request of cost 0 logs one entry (max(n, 1))",
			CaughtBy: []string{"strict/cost-zero"}, NeedsRedis: true, New: CostZeroConsumes, Weighted: true},
		{Name: "cost-negative-refunds", Breaks: "a negative cost is not validated: a cost of -k removes the k oldest entries, a refund, and is allowed",
			CaughtBy: []string{"robust/cost-negative"}, NeedsRedis: true, New: CostNegativeRefunds, Weighted: true},
		{Name: "cost-spread-scores", Breaks: "the n entries of a weighted request are unique by their scores (now, now-1, ..., now-(n-1)): all but one leave before s+W",
			CaughtBy: []string{"strict/cost-expiry-edge"}, NeedsRedis: true, New: CostSpreadScores, Weighted: true},
		{Name: "cost-invalid-over-free", Breaks: "a weighted request above what is free now, which a full quota would hold, is answered as invalid input (ErrInvalidCost), not denied",
			CaughtBy: []string{"strict/cost-all-or-nothing", "strict/cost-differential"}, NeedsRedis: true, New: CostInvalidOverFree, Weighted: true},
		{Name: "cost-non-atomic", Breaks: "a weighted request's count and add are separate round trips: concurrent weighted requests pass the same check",
			CaughtBy: []string{"strict/cost-concurrent"}, NeedsRedis: true, New: CostNonAtomic, Weighted: true},
	}
}
