package model

import (
	"fmt"
	"math"
	"time"
)

// Algorithm is an executable model of a rate-limiting algorithm: the exact
// sliding log of the contract, or one of the common alternatives a limiter
// may really be. rlconform replays a failing history on them to name the
// algorithm that explains it. Time is an argument, as in [State].
type Algorithm interface {
	// Name says what the algorithm is, with its parameters.
	Name() string
	// Hint says what to change in a limiter that behaves like it.
	Hint() string
	Allow(now time.Time, user string) bool
	// Remaining reports the remaining requests; ok is false when the
	// algorithm has no one answer for it (an estimate rounded either way).
	Remaining(now time.Time, user string) (n int, ok bool)
	Reset(user string)
	Configure(maxRequests int, window time.Duration)
}

// Alternatives returns the algorithms a limiter configured with n and w may
// really be, each fresh: the usual ways a sliding-window log goes wrong,
// and the usual algorithms other than a log.
func Alternatives(n int, w time.Duration) []Algorithm {
	// The well-known algorithms first, then the classic mistakes of a log:
	// the first that explains a history gives its hint.
	return []Algorithm{
		&FixedWindow{FirstHit: false, CountDenied: false, n: n, w: w},
		&FixedWindow{FirstHit: false, CountDenied: true, n: n, w: w},
		&FixedWindow{FirstHit: true, CountDenied: false, n: n, w: w},
		&FixedWindow{FirstHit: true, CountDenied: true, n: n, w: w},
		&SlidingCounter{CountDenied: false, n: n, w: w},
		&SlidingCounter{CountDenied: true, n: n, w: w},
		&GCRA{n: n, w: w},
		&logVariant{kind: "limit+1", n: n, w: w},
		&logVariant{kind: "limit-1", n: n, w: w},
		&logVariant{kind: "window/1000", n: n, w: w},
		&logVariant{kind: "count-denied", n: n, w: w},
		&logVariant{kind: "same-ms-once", n: n, w: w},
		&logVariant{kind: "inclusive", n: n, w: w},
	}
}

// logVariant is the sliding log with one classic mistake.
type logVariant struct {
	kind string
	n    int
	w    time.Duration
	logs map[string][]int64
}

func (l *logVariant) Name() string {
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
	}
	return fmt.Sprintf("a sliding log with a window of %v (the window's seconds taken as milliseconds)", l.window())
}

func (l *logVariant) Hint() string {
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
		l.logs = map[string][]int64{}
	}
	w := l.window()
	seen := map[int64]bool{}
	c := 0
	for _, s := range l.logs[user] {
		in := s > t-w && s <= t
		if l.kind == "inclusive" {
			in = s >= t-w && s <= t
		}
		if !in {
			continue
		}
		if l.kind == "same-ms-once" {
			if seen[s] {
				continue
			}
			seen[s] = true
		}
		c++
	}
	return c
}

func (l *logVariant) Allow(now time.Time, user string) bool {
	t := now.UnixMilli()
	ok := l.active(t, user) < l.limit()
	if ok || l.kind == "count-denied" {
		l.logs[user] = append(l.logs[user], t)
	}
	return ok
}

func (l *logVariant) Remaining(now time.Time, user string) (int, bool) {
	return max(0, l.limit()-l.active(now.UnixMilli(), user)), true
}

func (l *logVariant) Reset(user string) { delete(l.logs, user) }

func (l *logVariant) Configure(n int, w time.Duration) { l.n, l.w = n, w }

// FixedWindow counts requests per user in fixed windows of W: windows on
// the epoch's grid, or (FirstHit) a window opened by the first request
// after the previous one ended, as INCR + EXPIRE does. CountDenied counts
// denied requests too (INCR before the check).
type FixedWindow struct {
	FirstHit, CountDenied bool
	n                     int
	w                     time.Duration
	windows               map[string]*fixedCount
}

type fixedCount struct {
	start int64 // ms: the window is [start, start+W)
	count int
}

// NewFixedWindow returns a fixed-window model.
func NewFixedWindow(n int, w time.Duration, firstHit, countDenied bool) *FixedWindow {
	return &FixedWindow{FirstHit: firstHit, CountDenied: countDenied, n: n, w: w}
}

// Name implements [Algorithm].
func (f *FixedWindow) Name() string {
	s := fmt.Sprintf("a fixed window of %v aligned to the epoch", f.w)
	if f.FirstHit {
		s = fmt.Sprintf("a fixed window of %v opened by the first request", f.w)
	}
	if f.CountDenied {
		return s + ", counting denied requests"
	}
	return s + ", not counting denied requests"
}

// Hint implements [Algorithm].
func (f *FixedWindow) Hint() string {
	return "a counter per window lets N requests just before a window edge and N just after through: keep a log of the instants of allowed requests (a ZSET pruned to now-W) instead"
}

func (f *FixedWindow) current(t int64, user string) *fixedCount {
	if f.windows == nil {
		f.windows = map[string]*fixedCount{}
	}
	w := f.w.Milliseconds()
	c := f.windows[user]
	switch {
	case f.FirstHit && (c == nil || t >= c.start+w || t < c.start):
		c = &fixedCount{start: t}
	case !f.FirstHit && (c == nil || floorDiv(t, w)*w != c.start):
		c = &fixedCount{start: floorDiv(t, w) * w}
	}
	f.windows[user] = c
	return c
}

// Allow implements [Algorithm].
func (f *FixedWindow) Allow(now time.Time, user string) bool {
	c := f.current(now.UnixMilli(), user)
	ok := c.count < f.n
	if ok || f.CountDenied {
		c.count++
	}
	return ok
}

// Remaining implements [Algorithm].
func (f *FixedWindow) Remaining(now time.Time, user string) (int, bool) {
	return max(0, f.n-f.current(now.UnixMilli(), user).count), true
}

// Reset implements [Algorithm].
func (f *FixedWindow) Reset(user string) { delete(f.windows, user) }

// Configure implements [Algorithm].
func (f *FixedWindow) Configure(n int, w time.Duration) { f.n, f.w = n, w }

// SlidingCounter is the two-window weighted counter: windows on the epoch's
// grid, and at t in window k the estimate
//
//	count(k-1) * (W - (t - kW)) / W + count(k)
//
// a request being allowed while the estimate (a real number) is below N.
// CountDenied counts denied requests too. Remaining is not modelled: an
// estimate may be rounded either way.
type SlidingCounter struct {
	CountDenied bool
	n           int
	w           time.Duration
	counts      map[string]map[int64]int // user: window index: count
}

// Name implements [Algorithm].
func (s *SlidingCounter) Name() string {
	d := "not counting"
	if s.CountDenied {
		d = "counting"
	}
	return fmt.Sprintf("a two-window weighted counter (sliding-window estimate) of %v, %s denied requests", s.w, d)
}

// Hint implements [Algorithm].
func (s *SlidingCounter) Hint() string {
	return "a weighted estimate of the previous window lets more than N through when its requests came late in it: keep a log of the instants of allowed requests instead"
}

func (s *SlidingCounter) estimate(t int64, user string) (float64, int64) {
	if s.counts == nil {
		s.counts = map[string]map[int64]int{}
	}
	w := s.w.Milliseconds()
	k := floorDiv(t, w)
	c := s.counts[user]
	if c == nil {
		c = map[int64]int{}
		s.counts[user] = c
	}
	weight := float64(w-(t-k*w)) / float64(w)
	return float64(c[k-1])*weight + float64(c[k]), k
}

// Allow implements [Algorithm].
func (s *SlidingCounter) Allow(now time.Time, user string) bool {
	est, k := s.estimate(now.UnixMilli(), user)
	ok := est < float64(s.n)
	if ok || s.CountDenied {
		s.counts[user][k]++
	}
	return ok
}

// Remaining implements [Algorithm]: not modelled.
func (s *SlidingCounter) Remaining(time.Time, string) (int, bool) { return 0, false }

// Reset implements [Algorithm].
func (s *SlidingCounter) Reset(user string) { delete(s.counts, user) }

// Configure implements [Algorithm].
func (s *SlidingCounter) Configure(n int, w time.Duration) { s.n, s.w = n, w }

// GCRA is the generic cell rate algorithm (a leaky bucket as a meter), the
// same decisions as a token bucket of capacity N refilled continuously at N
// per W: emission interval T = W/N, a burst of N, and per user a
// theoretical arrival time TAT; a request at t is allowed when
// TAT - t <= (N-1)T, and then TAT = max(TAT, t) + T. Remaining is not
// modelled.
type GCRA struct {
	n   int
	w   time.Duration
	tat map[string]float64 // ms
}

// Name implements [Algorithm].
func (g *GCRA) Name() string {
	return fmt.Sprintf("GCRA (a token bucket of %d refilled continuously at %d per %v, one every %v)", g.n, g.n, g.w, g.interval())
}

// Hint implements [Algorithm].
func (g *GCRA) Hint() string {
	return "a rate with a burst lets requests through as soon as the bucket refills, one every W/N, not when an entry leaves the window: keep a log of the instants of allowed requests instead"
}

func (g *GCRA) interval() time.Duration { return g.w / time.Duration(g.n) }

// Allow implements [Algorithm].
func (g *GCRA) Allow(now time.Time, user string) bool {
	if g.tat == nil {
		g.tat = map[string]float64{}
	}
	t := float64(now.UnixMilli())
	T := float64(g.w.Milliseconds()) / float64(g.n)
	tat, ok := g.tat[user]
	if !ok {
		tat = t
	}
	if tat-t > float64(g.n-1)*T+1e-9 {
		return false
	}
	g.tat[user] = math.Max(tat, t) + T
	return true
}

// Remaining implements [Algorithm]: not modelled.
func (g *GCRA) Remaining(time.Time, string) (int, bool) { return 0, false }

// Reset implements [Algorithm].
func (g *GCRA) Reset(user string) { delete(g.tat, user) }

// Configure implements [Algorithm].
func (g *GCRA) Configure(n int, w time.Duration) { g.n, g.w = n, w }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// NewGCRA returns a GCRA model: N per W with a burst of N.
func NewGCRA(n int, w time.Duration) *GCRA { return &GCRA{n: n, w: w} }
