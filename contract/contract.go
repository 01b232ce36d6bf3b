// Package contract defines the rate limiter interface that rlconform grades,
// the errors it promises, and the capabilities a target declares.
package contract

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxUserIDBytes is the longest user id every conforming limiter must accept.
const MaxUserIDBytes = 512

// The largest configuration every conforming limiter must represent exactly.
// Lua (Redis scripts) and JavaScript numbers are doubles, exact for integers
// only up to 2^53; a time.Duration ends near 292 years; a window of MaxWindow
// added to any instant of this millennium stays below 2^53 ms.
const (
	// MaxLimit is the largest limit N: 2^53-1, JavaScript's
	// Number.MAX_SAFE_INTEGER.
	MaxLimit = 1<<53 - 1
	// MaxWindow is the longest window W: 100 years of 365 days.
	MaxWindow = 100 * 365 * 24 * time.Hour
)

// MaxWindowGranularity is the coarsest [Capabilities.WindowGranularity] a
// target may declare: windows in larger units cannot be graded in real
// time, and no honest limiter needs them.
const MaxWindowGranularity = time.Hour

// RateLimiterContract is an exact sliding-window log limiter. The rules
// below are the whole contract; docs/contract.md says them at length. Each
// names the specs that grade it.
//
// Configuration is a limit N >= 1 and a window W >= 1ms, honoured exactly
// at least up to N = [MaxLimit] and W = [MaxWindow]; time is integer
// milliseconds (sub-millisecond parts are dropped). Each user u has a log of the instants of its allowed
// requests; at instant t the active entries are those s with t-W < s <= t.
//
//   - AllowRequest(u) at t allows and logs t when fewer than N entries are
//     active, else denies; a denied request is not logged
//     (core/allow-within-limit, core/block-over-limit, strict/denied-not-logged).
//   - An entry stops counting at exactly s+W: s+W-1 still counts
//     (core/sliding-expiry, strict/rolling-expiry).
//   - There is no fixed window: N just before any instant and N just after
//     never add up to 2N within W (strict/boundary-burst-epoch,
//     strict/boundary-burst-first).
//   - Requests in the same millisecond all count (strict/same-millisecond-burst).
//   - GetRemainingRequests(u) is max(0, N - active); expired entries never
//     count (core/remaining, strict/lowered-limit).
//   - Reset(u) empties u's log and no other, atomically with respect to
//     decisions (core/reset, strict/reset-race).
//   - Configure(N, W) applies to every later decision, for every user and
//     every existing log, limit and window alike (core/reconfigure,
//     strict/lowered-limit, strict/raised-limit); the whole range of N and W
//     is honoured exactly (strict/config-range); a limit below 1 or a
//     window below 1ms returns [ErrInvalidConfig] and leaves the old
//     configuration in force; above [MaxLimit] or [MaxWindow] a limiter may
//     return that error or take the value, and then enforce a limit of at
//     least MaxLimit (a window of at least MaxWindow), not necessarily
//     exactly the value: past 2^53 a double cannot count by one; any other
//     error is wrong (robust/invalid-config).
//   - When the clock steps back, entries later than now stay in the log
//     and count once time reaches them. Until then a limiter may count
//     them (the conservative reading: ZCARD after the prune) or not (the
//     literal one: ZCOUNT up to now); every answer must be one of the two
//     readings' (strict/clock-step-back).
//   - Users are isolated (core/multi-user). A user id is any non-empty string
//     of up to [MaxUserIDBytes] bytes, opaque and case-sensitive
//     (robust/user-id-zoo); the empty id returns [ErrInvalidUserID]
//     (robust/empty-user-id).
//   - Under any concurrency, and across several instances sharing one store,
//     the history is linearizable against the model: never more than N
//     allowed, and nothing denied that a serial order would allow
//     (core/concurrent-4, strict/shared-store, strict/shared-store-concurrent,
//     strict/linearizable). Any sequence of operations answers as the model
//     does (strict/differential).
//   - Every key the limiter writes carries a TTL that covers its newest
//     entry and is at most a few windows (plus up to 5 minutes of spread
//     against expiry storms), and lives under the limiter's
//     prefix (robust/key-hygiene).
//   - While its store is stopped or frozen, every call answers within the
//     store timeout as the limiter's declared [StoreFailure] policy says:
//     an error wrapping [ErrStore] (the default), or AllowRequest allowed
//     or denied without an error; once the store is back the limiter
//     counts again from what the store holds, with no error and nothing
//     left of the outage (robust/store-outage). Every call honours its
//     context (robust/context-cancel).
//   - A service in front of a limiter tells its clients the truth, at
//     every phase of the window: a refusal's Retry-After is one a client
//     can obey, and the RateLimit fields give the policy enforced, the
//     quota left and a reset a client can obey (http/retry-after,
//     http/ratelimit-fields; docs/endpoints.md).
//
// Not promised: whether raising W brings back entries that had already left
// the old, shorter window (a limiter may have pruned them), nor whether an
// entry made before W was raised counts beyond the end of the window in
// force when it was made (its key's TTL was set from that window); the
// order of concurrent requests; ids longer than [MaxUserIDBytes].
type RateLimiterContract interface {
	// AllowRequest decides one request of userID now, and logs it if allowed.
	AllowRequest(ctx context.Context, userID string) (bool, error)
	// Configure sets the limit and the window for every later decision.
	Configure(ctx context.Context, maxRequests int, window time.Duration) error
	// GetRemainingRequests reports how many requests userID may make now.
	GetRemainingRequests(ctx context.Context, userID string) (int, error)
	// Reset forgets userID's history, and only userID's.
	Reset(ctx context.Context, userID string) error
}

var (
	// ErrInvalidConfig is returned by Configure for a limit below 1 or a
	// window below 1ms. A limiter may also return it for a limit above
	// [MaxLimit] or a window above [MaxWindow], or take those and enforce
	// a limit of at least MaxLimit (a window of at least MaxWindow).
	ErrInvalidConfig = errors.New("invalid rate limiter configuration")
	// ErrInvalidUserID is returned for an empty user id.
	ErrInvalidUserID = errors.New("invalid user id")
	// ErrInvalidCost is returned by [CostLimiter.AllowRequestN] for a
	// negative cost. A limiter may also return it for a cost that can
	// never fit (above the limit N, or above a bucket's burst): such a
	// request may be refused or answered with this error, never allowed.
	ErrInvalidCost = errors.New("invalid request cost")
	// ErrStore wraps every failure of the limiter's backing store.
	ErrStore = errors.New("rate limiter store failure")
	// ErrNoAnswer wraps a call whose answer never came: the connection to
	// a remote limiter dropped, or timed out. The limiter may or may not
	// have acted on it, so its outcome is unknown: a fault of the way to
	// the limiter, not an answer of it. Limiters never return it; the
	// adapters that reach them over a network do.
	ErrNoAnswer = errors.New("no answer from the limiter (outcome unknown)")
)

// ValidateConfig returns an error wrapping [ErrInvalidConfig] unless
// 1 <= maxRequests <= [MaxLimit] and 1ms <= window <= [MaxWindow]: it
// refuses what lies above the bounds, one of the two answers the contract
// allows there.
func ValidateConfig(maxRequests int, window time.Duration) error {
	if maxRequests < 1 || maxRequests > MaxLimit {
		return fmt.Errorf("%w: max requests %d, want 1 to %d", ErrInvalidConfig, maxRequests, MaxLimit)
	}
	if window < time.Millisecond || window > MaxWindow {
		return fmt.Errorf("%w: window %v, want 1ms to %v", ErrInvalidConfig, window, MaxWindow)
	}
	return nil
}

// ValidateCost returns an error wrapping [ErrInvalidCost] for a negative
// cost: the one cost no limiter may take. A cost of 0 is valid (it
// consumes nothing; a limiter may still refuse it as invalid), and so is
// one above the limit (it is refused).
func ValidateCost(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: cost %d, want 0 or more", ErrInvalidCost, n)
	}
	return nil
}

// CostLimiter is a limiter that takes a weight per request, as
// go-redis/redis_rate's AllowN, x/time/rate's AllowN and Bucket4j's
// tryConsume(n) do. A target declares it with [Capabilities.Cost]; the
// specs whose ids contain "cost" grade it.
//
// AllowRequestN decides a request of cost n of userID now, all or
// nothing: it is allowed when n more units fit (the sliding log: active
// entries + n <= N), and then counts n times, as n requests at this
// instant would; refused, it counts nothing (strict/cost-all-or-nothing;
// a profile that counts denied requests says what it counts: see
// docs/profiles.md). The n entries all stop counting at s+W
// (strict/cost-expiry-edge). AllowRequestN(ctx, u, 1) is
// AllowRequest(ctx, u). A cost of 0 consumes nothing, and its answer is
// not graded: some libraries allow it, some report whether one more would
// fit, some refuse it as [ErrInvalidCost] (strict/cost-zero); any other
// error fails. A negative cost returns [ErrInvalidCost] and
// changes nothing (robust/cost-negative). A cost that can never fit
// (above N, or above the burst of a bucket or GCRA) is refused or returns
// ErrInvalidCost, and is never allowed (strict/cost-never-fit). Any
// sequence of weighted and unit requests answers as the model does
// (strict/cost-differential), and concurrent ones are linearizable
// (strict/cost-concurrent).
type CostLimiter interface {
	RateLimiterContract
	AllowRequestN(ctx context.Context, userID string, n int) (bool, error)
}

// ValidateUserID returns an error wrapping [ErrInvalidUserID] for the empty
// id. Ids longer than [MaxUserIDBytes] are not promised to work; this check
// leaves that choice to each limiter.
func ValidateUserID(userID string) error {
	if userID == "" {
		return fmt.Errorf("%w: empty", ErrInvalidUserID)
	}
	return nil
}

// Capabilities are what a target declares it supports. A spec that needs a
// capability the target lacks is skipped, with the reason in the report, and
// never counts as a pass.
type Capabilities struct {
	// Clock: the limiter takes "now" from the clock the suite gives it, so
	// expiry is graded on a fake clock without waiting.
	Clock bool
	// Configure: Configure works at run time.
	Configure bool
	// Remaining: GetRemainingRequests is implemented.
	Remaining bool
	// Reset: Reset is implemented.
	Reset bool
	// Cost: the limiter implements [CostLimiter] (over protocol v1, its
	// allow takes a "cost"), so weighted requests are graded.
	Cost bool
	// SharedStore: several instances made by the target's factory for one
	// spec share one store and must enforce one limit.
	SharedStore bool
	// StoreInspection: every key the limiter writes lives in the Redis the
	// suite gave it, under the key prefix it gave, so the suite may read them.
	StoreInspection bool
	// StoreFailure is what the limiter answers while its store fails (is
	// down, or does not answer): [StoreFailureError] (also the zero value),
	// [StoreFailureAllow] or [StoreFailureDeny]. Read it with
	// [Capabilities.OnStoreFailure], which also reads FailOpen.
	StoreFailure StoreFailure
	// FailOpen: when the store is down, the limiter allows requests, with
	// or without an error.
	//
	// Deprecated: declare StoreFailure: [StoreFailureAllow]. A target that
	// sets FailOpen and leaves StoreFailure empty is graded as allow, and
	// may still return an error wrapping [ErrStore] with its allowed
	// answer, as FailOpen always let it.
	FailOpen bool
	// WindowGranularity is the unit the limiter's windows come in: it
	// refuses, with [ErrInvalidConfig], a window that is not a whole
	// multiple of it (time.Second for a limiter that works in whole
	// seconds). Zero means not declared: when Configure is declared, the
	// grader asks once at the start of a run (a window of 1.5s refused and
	// one of 2s taken means whole seconds). Every window the grader chooses
	// is then a multiple of it; only strict/config-range grades that the
	// contract's range begins at 1ms, and says why when it fails.
	WindowGranularity time.Duration
	// UnitWindows: Configure takes only windows of one unit, a second, a
	// minute, an hour or a day ([UnitWindowList]), and refuses any other
	// with [ErrInvalidConfig]: a protocol's units, as an RLS descriptor's
	// limit override carries them. The grader then chooses only these
	// windows: a spec that would change the window to another grades the
	// rest of what it grades and says so, and the specs of the contract's
	// range of configurations (strict/config-range, robust/invalid-config)
	// are not graded. It excludes WindowGranularity.
	UnitWindows bool
}

// UnitWindowList is the windows of [Capabilities.UnitWindows], in
// ascending order.
func UnitWindowList() []time.Duration {
	return []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour}
}

// All is every capability a fully featured target declares (fail-closed),
// but Cost: a limiter declares that it takes weighted requests itself.
func All() Capabilities {
	return Capabilities{Clock: true, Configure: true, Remaining: true, Reset: true, SharedStore: true, StoreInspection: true}
}

// StoreFailure is a limiter's declared policy while its store fails: what
// its calls answer when the store is stopped (connections refused) or
// frozen (connections hang). Whatever the policy, each call answers within
// the store timeout the grader is given (default 1s), and once the store
// is back the limiter counts from what the store holds.
type StoreFailure string

// The policies. GetRemainingRequests, Reset and Configure are not decided
// by them: a call that needs the store returns an error wrapping
// [ErrStore]; under allow and deny GetRemainingRequests may instead
// answer a count from 0 to the limit.
const (
	// StoreFailureError: every call returns an error wrapping [ErrStore];
	// AllowRequest returns false with it (over HTTP: 503). The default.
	StoreFailureError StoreFailure = "error"
	// StoreFailureAllow (fail open): AllowRequest returns true, nil (over
	// HTTP: 2xx {"allowed":true}; an endpoint lets the request through).
	StoreFailureAllow StoreFailure = "allow"
	// StoreFailureDeny (fail closed): AllowRequest returns false, nil (over
	// HTTP: 2xx {"allowed":false}; an endpoint answers its refusal status).
	StoreFailureDeny StoreFailure = "deny"
)

// HeaderStoreFailure is the HTTP header with which a service says that an
// answer is its store-failure policy's, "allow" or "deny", not its
// limiter's decision: its store failed. Protocol v1 says the same with the
// "store_failure" field of an allow answer. rlconform judges no spec on
// such answers but robust/store-outage, which grades the policy: a spec
// that met one is inconclusive. Send it only on answers of the policy.
const HeaderStoreFailure = "X-Rlc-Store-Failure"

// ParseStoreFailure reads a policy: "error", "allow" or "deny" ("" is
// error, the default). Anything else is an error.
func ParseStoreFailure(s string) (StoreFailure, error) {
	switch p := StoreFailure(s); p {
	case "":
		return StoreFailureError, nil
	case StoreFailureError, StoreFailureAllow, StoreFailureDeny:
		return p, nil
	}
	return "", fmt.Errorf("store failure policy %q: want error, allow or deny", s)
}

// OnStoreFailure is the policy c declares: StoreFailure when set, else
// [StoreFailureAllow] for the deprecated FailOpen, else
// [StoreFailureError].
func (c Capabilities) OnStoreFailure() StoreFailure {
	switch {
	case c.StoreFailure != "":
		return c.StoreFailure
	case c.FailOpen:
		return StoreFailureAllow
	}
	return StoreFailureError
}
