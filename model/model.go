// Package model is the executable specification every rlconform check
// compares with: the exact sliding-window log of the contract and the
// other honest algorithms (fixed windows, the weighted two-window
// counter, GCRA, token buckets), each described by one [Algorithm] (its
// parameters, its model, and what identify, the diagnosis and the bench
// need of it) in a set a caller may extend ([Builtin],
// [Algorithms.Register]); a [Variant] (an algorithm with its parameters:
// NAME[:key=value,...]) makes the [Profile] that decides; a
// concurrency-safe [Limiter] over any of them; and the real-time rule
// with its oracles ([NewOracle]), which judge answers whose instants are
// only known to lie between a call's sending and its answer.
package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
	"github.com/rlconform/rlconform/internal/plural"
)

// slidingLog is the whole behaviour of the contract (see
// [contract.RateLimiterContract] and docs/contract.md) as a pure value: the time of
// every operation is an argument, and nothing reads a clock. It is not safe
// for concurrent use; [Limiter] wraps it for that.
//
// Entries are pruned lazily, per user, when that user is next touched, with
// the window in force at that moment, as a Redis ZSET limiter does; this only
// matters for the unpromised case of raising the window (see
// [contract.RateLimiterContract]).
//
// A user's log holds one entry per instant with how many requests it
// logged there, so a request of cost n costs one entry, not n.
type slidingLog struct {
	max       int
	window    int64 // ms
	logs      map[string]*userLog
	decisions int
}

// userLog is one user's log: its entries, oldest first, one per instant,
// and how many requests they hold in all.
type userLog struct {
	entries []logEntry
	total   int
}

// logEntry is n requests logged at the instant at (ms).
type logEntry struct {
	at int64
	n  int
}

// newSlidingLog returns an empty state with the given configuration.
func newSlidingLog(maxRequests int, window time.Duration) (*slidingLog, error) {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return nil, err
	}
	return &slidingLog{max: maxRequests, window: window.Milliseconds(), logs: map[string]*userLog{}}, nil
}

// Limit returns the configured maximum number of requests.
func (s *slidingLog) Limit() int { return s.max }

// Window returns the configured window.
func (s *slidingLog) Window() time.Duration { return time.Duration(s.window) * time.Millisecond }

// Allow decides a request of user at now and logs it if allowed.
func (s *slidingLog) Allow(now time.Time, user string) (bool, error) {
	return s.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: a request of cost n is allowed when
// active + n <= N, and then logs n entries at now; refused, it logs
// nothing. Cost 0 is allowed and changes nothing.
func (s *slidingLog) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	if n == 0 {
		return true, nil
	}
	t := now.UnixMilli()
	s.maybeForget(t)
	active, count := s.active(t, user)
	if n > s.max-count {
		return false, nil
	}
	// Log at t after the active entries: entries later than t (the clock
	// stepped back) stay in the log, in order.
	l := s.logs[user]
	if l == nil {
		l = &userLog{}
		s.logs[user] = l
	}
	if k := len(active); k > 0 && active[k-1].at == t {
		l.entries[k-1].n += n
	} else {
		l.entries = slices.Insert(l.entries, k, logEntry{at: t, n: n})
	}
	l.total += n
	return true, nil
}

// validateRequest checks the user id and the cost of a request.
func validateRequest(user string, n int) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	return contract.ValidateCost(n)
}

// forgetEvery is how many decisions pass between sweeps of idle users.
const forgetEvery = 1024

// maybeForget drops, every forgetEvery decisions, the entries of every user
// that have left the window at t, and the users left with none: an idle
// user costs nothing after the window, in the model as in Redis.
func (s *slidingLog) maybeForget(t int64) {
	s.decisions++
	if s.decisions%forgetEvery != 0 {
		return
	}
	for user := range s.logs {
		s.active(t, user)
	}
}

// Users returns how many users have entries in the log.
func (s *slidingLog) Users() int { return len(s.logs) }

// Remaining reports max(0, N - active) for user at now.
func (s *slidingLog) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	_, count := s.active(now.UnixMilli(), user)
	return max(0, s.max-count), nil
}

// RetryAfter reports how long from now until user may be allowed again: 0
// when a request would be allowed now.
func (s *slidingLog) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	active, count := s.active(t, user)
	if count < s.max {
		return 0
	}
	// The request is allowed once count-max+1 entries have expired, oldest
	// first.
	gone := 0
	for _, e := range active {
		if gone += e.n; gone >= count-s.max+1 {
			return time.Duration(e.at+s.window-t) * time.Millisecond
		}
	}
	return 0 // not reached: the active entries hold count
}

// Active returns how many entries of user count at now.
func (s *slidingLog) Active(now time.Time, user string) int {
	_, count := s.active(now.UnixMilli(), user)
	return count
}

// Unexpired returns how many entries of user have not left the window at
// now, the entries later than now included: what a script that prunes to
// now-W and counts with ZCARD counts. It differs from [slidingLog.Active] only
// after the clock stepped back; the contract lets a limiter count either
// way (the literal reading, Active, or this conservative one).
func (s *slidingLog) Unexpired(now time.Time, user string) int {
	t := now.UnixMilli()
	s.active(t, user) // prunes
	if l := s.logs[user]; l != nil {
		return l.total
	}
	return 0
}

// Reset forgets user's log.
func (s *slidingLog) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(s.logs, user)
	return nil
}

// Configure sets the limit and window for every later decision; invalid
// values leave the old ones in force.
func (s *slidingLog) Configure(_ time.Time, maxRequests int, window time.Duration) error {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return err
	}
	s.max, s.window = maxRequests, window.Milliseconds()
	return nil
}

// active prunes user's log of entries with e <= t-W and returns those with
// e <= t, with how many requests they hold. Entries after t (the clock was
// set back) are kept, not counted.
func (s *slidingLog) active(t int64, user string) ([]logEntry, int) {
	l := s.logs[user]
	if l == nil {
		return nil, 0
	}
	cut := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].at > t-s.window })
	for _, e := range l.entries[:cut] {
		l.total -= e.n
	}
	l.entries = l.entries[cut:]
	if len(l.entries) == 0 {
		delete(s.logs, user)
		return nil, 0
	}
	end := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].at > t })
	count := l.total
	for _, e := range l.entries[end:] {
		count -= e.n
	}
	return l.entries[:end], count
}

// Limiter is the model as a [contract.RateLimiterContract] on a clock, safe
// for concurrent use. Its operations are atomic, so it is linearizable by
// construction; rlconform grades it alongside the reference to prove that
// every spec agrees with the model.
type Limiter struct {
	clock fakeclock.Clock
	mu    sync.Mutex
	state Profile
}

var _ contract.CostLimiter = (*Limiter)(nil)

// NewLimiter returns a model limiter of the sliding log reading time from
// clock.
func NewLimiter(clock fakeclock.Clock, maxRequests int, window time.Duration) (*Limiter, error) {
	s, err := newSlidingLog(maxRequests, window)
	if err != nil {
		return nil, err
	}
	return &Limiter{clock: clock, state: s}, nil
}

// NewProfileLimiter returns a limiter that answers as the profile p does
// on clock; it owns p from then on.
func NewProfileLimiter(clock fakeclock.Clock, p Profile) *Limiter {
	return &Limiter{clock: clock, state: p}
}

// AllowRequest implements [contract.RateLimiterContract].
func (l *Limiter) AllowRequest(ctx context.Context, userID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Allow(l.clock.Now(), userID)
}

// AllowRequestN implements [contract.CostLimiter] when the limiter's
// profile is [Weighted] (every built-in one is): a request of cost n, as
// the profile's [Algorithm.Cost] says. A negative n is an error wrapping
// [contract.ErrInvalidCost]; a cost other than 1 for a profile that is not
// Weighted, one wrapping [errors.ErrUnsupported].
func (l *Limiter) AllowRequestN(ctx context.Context, userID string, n int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return AllowN(l.state, l.clock.Now(), userID, n)
}

// AllowN decides a request of cost n of user at now on p: p's AllowN when
// p is [Weighted], its Allow for a cost of 1. A negative n is an error
// wrapping [contract.ErrInvalidCost]; another cost on a profile that is
// not Weighted, one wrapping [errors.ErrUnsupported].
func AllowN(p Profile, now time.Time, user string, n int) (bool, error) {
	if w, ok := p.(Weighted); ok {
		return w.AllowN(now, user, n)
	}
	if err := contract.ValidateCost(n); err != nil {
		return false, err
	}
	if n == 1 {
		return p.Allow(now, user)
	}
	return false, fmt.Errorf("model: %s takes no request of cost %d: %w", p.Describe(), n, errors.ErrUnsupported)
}

// Configure implements [contract.RateLimiterContract].
func (l *Limiter) Configure(ctx context.Context, maxRequests int, window time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Configure(l.clock.Now(), maxRequests, window)
}

// GetRemainingRequests implements [contract.RateLimiterContract].
func (l *Limiter) GetRemainingRequests(ctx context.Context, userID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Remaining(l.clock.Now(), userID)
}

// Reset implements [contract.RateLimiterContract].
func (l *Limiter) Reset(ctx context.Context, userID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Reset(userID)
}

// Log returns the entries of user that count at now, oldest first, one
// per request.
func (s *slidingLog) Log(now time.Time, user string) []time.Time {
	active, count := s.active(now.UnixMilli(), user)
	out := make([]time.Time, 0, count)
	for _, e := range active {
		for range e.n {
			out = append(out, time.UnixMilli(e.at))
		}
	}
	return out
}

// Describe implements [Profile].
func (s *slidingLog) Describe() string {
	return fmt.Sprintf("the exact sliding log of %d per %v", s.max, s.Window())
}

// Lifetime implements [Profile]: until the newest entry leaves.
func (s *slidingLog) Lifetime(now time.Time, user string) time.Duration {
	l := s.logs[user]
	if l == nil || len(l.entries) == 0 {
		return 0
	}
	return time.Duration(max(0, l.entries[len(l.entries)-1].at+s.window-now.UnixMilli())) * time.Millisecond
}

// Explain implements [Profile]: the entries that count at now.
func (s *slidingLog) Explain(now, base time.Time, user string) string {
	active, count := s.active(now.UnixMilli(), user)
	var b strings.Builder
	fmt.Fprintf(&b, "the model counts %d of limit %d for %s: the entries in (%s, %s]", count, s.max, user, offset(now.Add(-s.Window()), base), offset(now, base))
	if count == 0 {
		b.WriteString(" (none)")
	} else {
		b.WriteString(" at")
	}
	// Entries at one instant are shown once, with a count.
	shown := 0
	for i, e := range active {
		if i == 8 {
			fmt.Fprintf(&b, " … %d more", count-shown)
			break
		}
		b.WriteString(" " + offset(time.UnixMilli(e.at), base))
		if e.n > 1 {
			fmt.Fprintf(&b, "×%d", e.n)
		}
		shown += e.n
	}
	if count >= s.max {
		b.WriteString(": every slot is taken")
	} else {
		fmt.Fprintf(&b, ": %d slot(s) free", s.max-count)
	}
	return b.String()
}

// Clone implements [Profile].
func (s *slidingLog) Clone() Profile {
	c := *s
	c.logs = make(map[string]*userLog, len(s.logs))
	for u, l := range s.logs {
		c.logs[u] = &userLog{entries: slices.Clone(l.entries), total: l.total}
	}
	return &c
}

// StateKey implements [Profile].
func (s *slidingLog) StateKey(user string) string {
	if l := s.logs[user]; l != nil {
		return fmt.Sprint(l.entries)
	}
	return ""
}

// slidingLogAlgorithm describes the contract's own algorithm.
func slidingLogAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileSlidingLog,
		Summary: "the exact sliding-window log: at t the allowed requests in (t-W, t] count; allowed while fewer than N count",
		New: func(_ map[string]string, n int, w time.Duration) Replayable {
			s, _ := newSlidingLog(n, w) // Variant.New validated the configuration
			return s
		},
		Cost:              "allowed when active + n <= N (active: the entries in (t-W, t]), then n entries at t, as n requests at t would log; refused, nothing is logged; n > N is never allowed; " + costShared,
		GradesLimitChange: true,
		Candidates:        func([]string) []string { return []string{""} },
		Suspects:          []string{""},
		Remedy:            "grade this limiter against the profile it implements (--profile), or fix it to the profile it is graded against",
		Envelope: func(_ map[string]string, n int64, w time.Duration) Envelope {
			return Envelope{
				Linear: []LinearBound{{Windows: n, Within: 1, Rule: fmt.Sprintf("at most %d allowed within less than %v", n, w)}},
				Under:  UnderRule{Limit: n, LookbackWindows: 1, Rule: fmt.Sprintf("a denial needs %s within less than %v before it", plural.Count(n, "allowed request"), w)},
			}
		},
	}
}
