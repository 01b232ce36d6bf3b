// Package alternatives lists what a limiter graded against one profile
// may really be: the other profiles, and the classic mistakes of a sliding
// log, each with what to change. The grader's diagnosis and identify
// replay a failing history on each of them.
package alternatives

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/model"
)

// Algorithm is what a limiter may really be, as far as naming it goes:
// a profile (model.Profile), or a sliding log with a classic mistake.
// Time is an argument, as in model.Profile.
type Algorithm interface {
	// Describe says what the algorithm is, with its parameters.
	Describe() string
	Allow(now time.Time, user string) (bool, error)
	Remaining(now time.Time, user string) (int, error)
	Reset(user string) error
	Configure(now time.Time, maxRequests int, window time.Duration) error
}

// Alternative is an algorithm a failing history may show, with what to
// change in a limiter that behaves like it.
type Alternative struct {
	Algorithm
	Hint string
	// Key names it the same whatever the configuration: the profile
	// (Variant.String) or "mistake:" and the mistake's name. A run's specs
	// are configured differently; Key says which answers of theirs are
	// the same alternative's.
	Key string
	// Variant is the profile it is; zero for a sliding log with a mistake.
	Variant model.Variant
	// RemainingVaries: honest implementations of it report remaining
	// differently (an estimate rounded either way), so a diagnosis does not
	// compare those answers.
	RemainingVaries bool
}

// For returns the algorithms a limiter graded against the variant graded,
// configured with n and w, may really be, each fresh: the suspects of
// every algorithm of set ([model.Algorithm.Suspects]), the contract's
// sliding log last, and, for a limiter graded as a sliding log, the usual
// ways a sliding log goes wrong. The well-known algorithms come first:
// the first that explains a history gives its hint.
func For(set *model.Algorithms, graded model.Variant, n int, w time.Duration) []Alternative {
	algs := set.All()
	slices.SortStableFunc(algs, func(a, b *model.Algorithm) int {
		return cmp.Compare(b2i(a.Name == model.ProfileSlidingLog), b2i(b.Name == model.ProfileSlidingLog))
	})
	var out []Alternative
	for _, alg := range algs {
		for _, params := range alg.Suspects {
			if a, ok := suspect(set, alg, params, graded, n, w); ok {
				out = append(out, a)
			}
		}
	}
	if !graded.IsSlidingLog() {
		return out // a log's mistakes say nothing of a limiter that is not one
	}
	out = append(out, Mistakes(n, w)...)
	// A mistake of remaining alone: its decisions are the log's, so only
	// a diagnosis, which compares remaining too, can name it (identify
	// judges decisions).
	v := &logVariant{kind: "truncated-start", n: n, w: w}
	return append(out, Alternative{Algorithm: v, Hint: v.hint(), Key: "mistake:" + v.kind})
}

// suspect is the variant of alg with params as an alternative to graded,
// unless it is graded itself or cannot be made.
func suspect(set *model.Algorithms, alg *model.Algorithm, params string, graded model.Variant, n int, w time.Duration) (Alternative, bool) {
	s := alg.Name
	if params != "" {
		s += ":" + params
	}
	sp, err := set.Parse(s)
	if err != nil || sp.String() == graded.String() {
		return Alternative{}, false
	}
	p, err := sp.New(n, w)
	if err != nil {
		return Alternative{}, false
	}
	hint := alg.Remedy
	if !graded.IsSlidingLog() {
		// A log's remedy says nothing to a limiter graded as another
		// profile: it implements this one, or should implement that.
		hint = fmt.Sprintf("the answers are %s's: grade the limiter against the profile it implements (--profile %s), or make it decide as %s", sp.Name, sp, graded)
	}
	return Alternative{Algorithm: p, Hint: hint, Key: sp.String(), Variant: sp, RemainingVaries: alg.RemainingVaries}, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Mistakes returns the classic mistakes of a sliding log configured with n
// and w, each fresh, always in the same order.
func Mistakes(n int, w time.Duration) []Alternative {
	var out []Alternative
	for _, kind := range []string{"limit+1", "limit-1", "window/1000", "count-denied", "same-ms-once", "inclusive"} {
		v := &logVariant{kind: kind, n: n, w: w}
		out = append(out, Alternative{Algorithm: v, Hint: v.hint(), Key: "mistake:" + kind})
	}
	return out
}

// logVariant is the sliding log with one classic mistake.
type logVariant struct {
	kind string
	n    int
	w    time.Duration
	logs map[string][]stamp
}

// stamp is n entries logged at the instant at (ms): a request of cost n
// costs one stamp.
type stamp struct {
	at int64
	n  int
}

func (l *logVariant) Describe() string {
	switch l.kind {
	case "limit+1":
		return fmt.Sprintf("a sliding log that allows %d requests, one more than the limit", l.n+1)
	case "limit-1":
		return fmt.Sprintf("a sliding log that allows %d requests, one fewer than the limit", l.n-1)
	case "inclusive":
		return "a sliding log whose entries still count at exactly s+W"
	case "count-denied":
		return "a sliding log that logs denied requests too"
	case "same-ms-once":
		return "a sliding log where requests in the same millisecond count once"
	case "truncated-start":
		return "a sliding log whose remaining counts from the window's start truncated to whole seconds (int(now - W)), up to a second of older entries"
	}
	return fmt.Sprintf("a sliding log with a window of %v (the window's seconds taken as milliseconds)", l.window())
}

func (l *logVariant) hint() string {
	switch l.kind {
	case "limit+1":
		return "compare count < N before adding: count <= N admits N+1"
	case "limit-1":
		return "allow while count < N: the Nth request is denied now (count < N-1, or the new request counted before the check)"
	case "inclusive":
		return "an entry must stop counting at exactly s+W: prune with ZREMRANGEBYSCORE key -inf now-W (inclusive), not (now-W"
	case "count-denied":
		return "add to the log only the requests that are allowed"
	case "same-ms-once":
		return "make every ZSET member unique (timestamp plus a sequence), or requests in one millisecond collapse into one"
	case "truncated-start":
		return "count remaining from exactly now - W, in the log's own unit: truncating the window's start to whole seconds (int(now - W), math.floor) counts entries that no longer count"
	}
	return "the window is in milliseconds: W seconds is W*1000 ms"
}

func (l *logVariant) limit() int {
	switch l.kind {
	case "limit+1":
		return l.n + 1
	case "limit-1":
		return l.n - 1
	}
	return l.n
}

func (l *logVariant) window() int64 {
	if l.kind == "window/1000" {
		return max(1, l.w.Milliseconds()/1000)
	}
	return l.w.Milliseconds()
}

func (l *logVariant) active(t int64, user string) int {
	if l.logs == nil {
		l.logs = map[string][]stamp{}
	}
	w := l.window()
	seen := map[int64]bool{}
	c := 0
	for _, s := range l.logs[user] {
		in := s.at > t-w && s.at <= t
		if l.kind == "inclusive" {
			in = s.at >= t-w && s.at <= t
		}
		if !in {
			continue
		}
		if l.kind == "same-ms-once" {
			if !seen[s.at] {
				c++
			}
			seen[s.at] = true
			continue
		}
		c += s.n
	}
	return c
}

func (l *logVariant) Allow(now time.Time, user string) (bool, error) {
	return l.AllowN(now, user, 1)
}

// AllowN implements [model.Weighted] as the mistaken log would: a request
// of cost n is allowed when its count + n <= its limit, and then logs n
// entries at now (count-denied: refused too; same-ms-once: they count
// once). Cost 0 is allowed and changes nothing.
func (l *logVariant) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := contract.ValidateCost(n); err != nil {
		return false, err
	}
	if n == 0 {
		return true, nil
	}
	t := now.UnixMilli()
	ok := n <= l.limit()-l.active(t, user)
	if ok || l.kind == "count-denied" {
		l.logs[user] = append(l.logs[user], stamp{at: t, n: n})
	}
	return ok, nil
}

var _ model.Weighted = (*logVariant)(nil)

func (l *logVariant) Remaining(now time.Time, user string) (int, error) {
	t := now.UnixMilli()
	if l.kind == "truncated-start" {
		// The entries from the start's whole second on, as
		// ZCOUNT key int(now - W) now does.
		start := time.UnixMilli(t - l.window()).Truncate(time.Second).UnixMilli() // floored, before 1970 too
		c := 0
		for _, s := range l.logs[user] {
			if s.at >= start && s.at <= t {
				c += s.n
			}
		}
		return max(0, l.limit()-c), nil
	}
	return max(0, l.limit()-l.active(t, user)), nil
}

func (l *logVariant) Reset(user string) error { delete(l.logs, user); return nil }

func (l *logVariant) Configure(_ time.Time, n int, w time.Duration) error {
	l.n, l.w = n, w
	return nil
}
