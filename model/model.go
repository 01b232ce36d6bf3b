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
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
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
type slidingLog struct {
	max       int
	window    int64 // ms
	logs      map[string][]int64
	decisions int
}

// newSlidingLog returns an empty state with the given configuration.
func newSlidingLog(maxRequests int, window time.Duration) (*slidingLog, error) {
	if err := contract.ValidateConfig(maxRequests, window); err != nil {
		return nil, err
	}
	return &slidingLog{max: maxRequests, window: window.Milliseconds(), logs: map[string][]int64{}}, nil
}

// Limit returns the configured maximum number of requests.
func (s *slidingLog) Limit() int { return s.max }

// Window returns the configured window.
func (s *slidingLog) Window() time.Duration { return time.Duration(s.window) * time.Millisecond }

// Allow decides a request of user at now and logs it if allowed.
func (s *slidingLog) Allow(now time.Time, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, err
	}
	t := now.UnixMilli()
	s.maybeForget(t)
	active := s.active(t, user)
	if len(active) >= s.max {
		return false, nil
	}
	// Insert t after the active entries: entries later than t (the clock
	// stepped back) stay in the log, in order.
	log := s.logs[user]
	s.logs[user] = slices.Insert(log, len(active), t)
	return true, nil
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
	return max(0, s.max-len(s.active(now.UnixMilli(), user))), nil
}

// RetryAfter reports how long from now until user may be allowed again: 0
// when a request would be allowed now.
func (s *slidingLog) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	log := s.active(t, user)
	if len(log) < s.max {
		return 0
	}
	// The request is allowed once len(log)-max+1 entries have expired.
	return time.Duration(log[len(log)-s.max]+s.window-t) * time.Millisecond
}

// Active returns how many entries of user count at now.
func (s *slidingLog) Active(now time.Time, user string) int {
	return len(s.active(now.UnixMilli(), user))
}

// Unexpired returns how many entries of user have not left the window at
// now, the entries later than now included: what a script that prunes to
// now-W and counts with ZCARD counts. It differs from [slidingLog.Active] only
// after the clock stepped back; the contract lets a limiter count either
// way (the literal reading, Active, or this conservative one).
func (s *slidingLog) Unexpired(now time.Time, user string) int {
	t := now.UnixMilli()
	s.active(t, user) // prunes
	return len(s.logs[user])
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
// e <= t. Entries after t (the clock was set back) are kept, not counted.
func (s *slidingLog) active(t int64, user string) []int64 {
	log := s.logs[user]
	cut := sort.Search(len(log), func(i int) bool { return log[i] > t-s.window })
	log = log[cut:]
	if len(log) == 0 {
		delete(s.logs, user)
		return nil
	}
	s.logs[user] = log
	end := sort.Search(len(log), func(i int) bool { return log[i] > t })
	return log[:end]
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

// Log returns the entries of user that count at now, oldest first.
func (s *slidingLog) Log(now time.Time, user string) []time.Time {
	log := s.active(now.UnixMilli(), user)
	out := make([]time.Time, len(log))
	for i, e := range log {
		out[i] = time.UnixMilli(e)
	}
	return out
}

// Describe implements [Profile].
func (s *slidingLog) Describe() string {
	return fmt.Sprintf("the exact sliding log of %d per %v", s.max, s.Window())
}

// Lifetime implements [Profile]: until the newest entry leaves.
func (s *slidingLog) Lifetime(now time.Time, user string) time.Duration {
	log := s.logs[user]
	if len(log) == 0 {
		return 0
	}
	return time.Duration(max(0, log[len(log)-1]+s.window-now.UnixMilli())) * time.Millisecond
}

// Explain implements [Profile]: the entries that count at now.
func (s *slidingLog) Explain(now, base time.Time, user string) string {
	log := s.Log(now, user)
	var b strings.Builder
	fmt.Fprintf(&b, "the model counts %d of limit %d for %s: the entries in (%s, %s]", len(log), s.max, user, offset(now.Add(-s.Window()), base), offset(now, base))
	if len(log) == 0 {
		b.WriteString(" (none)")
	} else {
		b.WriteString(" at")
	}
	// Entries at one instant are shown once, with a count.
	for i, shown := 0, 0; i < len(log); shown++ {
		j := i
		for j < len(log) && log[j].Equal(log[i]) {
			j++
		}
		if shown == 8 {
			fmt.Fprintf(&b, " … %d more", len(log)-i)
			break
		}
		b.WriteString(" " + offset(log[i], base))
		if j-i > 1 {
			fmt.Fprintf(&b, "×%d", j-i)
		}
		i = j
	}
	if len(log) >= s.max {
		b.WriteString(": every slot is taken")
	} else {
		fmt.Fprintf(&b, ": %d slot(s) free", s.max-len(log))
	}
	return b.String()
}

// Clone implements [Profile].
func (s *slidingLog) Clone() Profile {
	c := *s
	c.logs = make(map[string][]int64, len(s.logs))
	for u, log := range s.logs {
		c.logs[u] = slices.Clone(log)
	}
	return &c
}

// StateKey implements [Profile].
func (s *slidingLog) StateKey(user string) string { return fmt.Sprint(s.logs[user]) }

// slidingLogAlgorithm describes the contract's own algorithm.
func slidingLogAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileSlidingLog,
		Summary: "the exact sliding-window log: at t the allowed requests in (t-W, t] count; allowed while fewer than N count",
		New: func(_ map[string]string, n int, w time.Duration) Replayable {
			s, _ := newSlidingLog(n, w) // Variant.New validated the configuration
			return s
		},
		GradesLimitChange: true,
		Candidates:        func([]string) []string { return []string{""} },
		Suspects:          []string{""},
		Remedy:            "grade this limiter against the profile it implements (--profile), or fix it to the profile it is graded against",
		Envelope: func(_ map[string]string, n int64, w time.Duration) Envelope {
			return Envelope{
				Linear: []LinearBound{{Windows: n, Within: 1, Rule: fmt.Sprintf("at most %d allowed within less than %v", n, w)}},
				Under:  UnderRule{Limit: n, LookbackWindows: 1, Rule: fmt.Sprintf("a denial needs %d allowed requests within less than %v before it", n, w)},
			}
		},
	}
}
