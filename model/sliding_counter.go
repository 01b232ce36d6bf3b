package model

import (
	"fmt"
	"maps"
	"math/big"
	"time"

	"github.com/rlconform/rlconform/contract"
)

// slidingCounter is the two-window weighted counter: a count per user and
// window [a+kW, a+(k+1)W), and at t in window k, e = t-a-kW ms into it,
// the estimate
//
//	est(t) = prev * (W - e) / W + cur
//
// where cur counts window k and prev window k-1. The windows are on the
// epoch (align epoch: a = 0), on Go's zero time (go-zero: a = 0001-01-01
// UTC, as time.Time.Truncate lays them), or (first-grid) on a grid
// anchored at the user's first counted request, forgotten, anchor and all, once a whole window has
// passed with no counted request (HAProxy's http_req_rate). A request is
// allowed when est(t) < N (admit=below), or, with atMost (admit=at-most),
// when the estimate including this request is at most N: est(t) + 1 <= N.
// Both are computed exactly, with no rounding: prev*(W-e) + cur*W < N*W,
// and prev*(W-e) + (cur+1)*W <= N*W. countDenied counts denied requests
// too. Remaining is the number of requests allowed at t, one after the
// other: max(0, ceil((N*W - prev*(W-e)) / W) - cur), and with atMost
// max(0, floor((N*W - prev*(W-e)) / W) - cur).
type slidingCounter struct {
	countDenied bool
	align       string // epoch, go-zero, first-grid
	atMost      bool
	n           int
	w           int64
	users       map[string]counterState
}

type counterState struct {
	a         int64 // the grid's origin: 0 (the epoch), Go's zero time, or the first-grid anchor
	k         int64 // the window of cur
	prev, cur int64
}

// Describe implements [Profile].
func (s *slidingCounter) Describe() string {
	d := "not counting"
	if s.countDenied {
		d = "counting"
	}
	admit := ""
	if s.atMost {
		admit = ", allowed while the estimate including the request is at most the limit"
	}
	switch s.align {
	case "first-grid":
		return fmt.Sprintf("a two-window weighted counter (sliding-window estimate) of %v on periods anchored at the user's first request, %s denied requests, limit %d%s", ms(s.w), d, s.n, admit)
	case "go-zero":
		return fmt.Sprintf("a two-window weighted counter (sliding-window estimate) of %v on windows aligned to Go's zero time (0001-01-01 UTC, as time.Time.Truncate), %s denied requests, limit %d%s", ms(s.w), d, s.n, admit)
	}
	return fmt.Sprintf("a two-window weighted counter (sliding-window estimate) of %v, %s denied requests, limit %d%s", ms(s.w), d, s.n, admit)
}

// Limit implements [Profile].
func (s *slidingCounter) Limit() int { return s.n }

// Window implements [Profile].
func (s *slidingCounter) Window() time.Duration { return ms(s.w) }

// at is the user's counts rolled to the window holding t.
func (s *slidingCounter) at(t int64, user string) counterState {
	st, ok := s.users[user]
	a := gridOrigin(s.align)
	if s.align == "first-grid" {
		if !ok || t < st.a || t >= st.a+(st.k+2)*s.w {
			return counterState{a: t} // a new grid, anchored here
		}
		a = st.a
	}
	k := floorDiv(t-a, s.w)
	switch {
	case !ok || k > st.k+1 || k < st.k:
		return counterState{a: a, k: k}
	case k == st.k+1:
		return counterState{a: a, k: k, prev: st.cur}
	}
	return st
}

// room is N*W - prev*(W-e) - cur*W, less W-1 with atMost: positive when a
// request is allowed, and ceil(room/W) requests are.
func (s *slidingCounter) room(t int64, st counterState) *big.Int {
	e := t - st.a - st.k*s.w
	r := new(big.Int).Mul(big.NewInt(int64(s.n)), big.NewInt(s.w))
	r.Sub(r, new(big.Int).Mul(big.NewInt(st.prev), big.NewInt(s.w-e)))
	r.Sub(r, new(big.Int).Mul(big.NewInt(st.cur), big.NewInt(s.w)))
	return r.Sub(r, big.NewInt(s.slack()))
}

// slack is what the room gives up so that "positive" means allowed: with
// atMost, prev*(W-e) + (cur+1)*W <= N*W is N*W - prev*(W-e) - cur*W - (W-1) > 0.
func (s *slidingCounter) slack() int64 {
	if s.atMost {
		return s.w - 1
	}
	return 0
}

// Allow implements [Profile].
func (s *slidingCounter) Allow(now time.Time, user string) (bool, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return false, err
	}
	t := now.UnixMilli()
	st := s.at(t, user)
	ok := s.room(t, st).Sign() > 0
	if ok || s.countDenied {
		st.cur++
		if s.users == nil {
			s.users = map[string]counterState{}
		}
		s.users[user] = st
	}
	return ok, nil
}

// Remaining implements [Profile].
func (s *slidingCounter) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	t := now.UnixMilli()
	r := s.room(t, s.at(t, user))
	if r.Sign() <= 0 {
		return 0, nil
	}
	// ceil(room / W) more requests fit.
	w := big.NewInt(s.w)
	q := new(big.Int).Add(r, new(big.Int).Sub(w, big.NewInt(1)))
	return int(q.Quo(q, w).Int64()), nil
}

// RetryAfter implements [Profile]: the first instant the estimate falls
// below N, in this window or the next.
func (s *slidingCounter) RetryAfter(now time.Time, user string) time.Duration {
	t := now.UnixMilli()
	st := s.at(t, user)
	if s.room(t, st).Sign() > 0 {
		return 0
	}
	start := st.a + st.k*s.w
	if e, ok := s.firstRoom(st.prev, st.cur); ok && start+e > t {
		return ms(start + e - t)
	}
	// In the next window the current count is weighted by W-e.
	e, _ := s.firstRoom(st.cur, 0)
	return ms(start + s.w + e - t)
}

// firstRoom is the first e in [0, W) at which prev*(W-e) < (N-cur)*W -
// slack (the room is positive), when there is one.
func (s *slidingCounter) firstRoom(prev, cur int64) (int64, bool) {
	num := new(big.Int).Mul(big.NewInt(int64(s.n)-cur), big.NewInt(s.w))
	num.Sub(num, big.NewInt(s.slack()))
	if num.Sign() <= 0 {
		return 0, false
	}
	if prev == 0 {
		return 0, true
	}
	// e > W - num/prev: e = W - floor(that), one more on exact division.
	q, m := new(big.Int).QuoRem(num, big.NewInt(prev), new(big.Int))
	if q.Cmp(big.NewInt(s.w)) > 0 {
		return 0, true
	}
	e := s.w - q.Int64()
	if m.Sign() == 0 {
		e++
	}
	return max(0, e), e < s.w
}

// Lifetime implements [Profile]: a count matters until the end of the
// window after its own.
func (s *slidingCounter) Lifetime(now time.Time, user string) time.Duration {
	st, ok := s.users[user]
	if !ok {
		return 0
	}
	return ms(max(0, st.a+(st.k+2)*s.w-now.UnixMilli()))
}

// Reset implements [Profile].
func (s *slidingCounter) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(s.users, user)
	return nil
}

// Configure implements [Profile]: counts are kept, windows laid out anew.
func (s *slidingCounter) Configure(_ time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	s.n, s.w = n, w.Milliseconds()
	return nil
}

// Explain implements [Profile].
func (s *slidingCounter) Explain(now, base time.Time, user string) string {
	t := now.UnixMilli()
	st := s.at(t, user)
	start := st.a + st.k*s.w
	e := t - start
	with := ""
	if s.atMost {
		with = " + 1 (this request)"
	}
	return fmt.Sprintf("the window [%s, %s) of %s has counted %d and the one before %d: the estimate is %d×(%d-%d)/%d + %d%s, limit %d",
		offset(time.UnixMilli(start), base), offset(time.UnixMilli(start+s.w), base), user, st.cur, st.prev, st.prev, s.w, e, s.w, st.cur, with, s.n)
}

// Clone implements [Profile].
func (s *slidingCounter) Clone() Profile {
	c := *s
	c.users = maps.Clone(s.users)
	return &c
}

// StateKey implements [Profile].
func (s *slidingCounter) StateKey(user string) string {
	st, ok := s.users[user]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d/%d/%d/%d", st.a, st.k, st.prev, st.cur)
}

// slidingCounterAlgorithm describes the two-window weighted counter.
func slidingCounterAlgorithm() Algorithm {
	return Algorithm{
		Name:    ProfileSlidingCounter,
		Summary: "the two-window weighted counter: previous window's count × the part of it still inside (t-W, t], plus the current count, below N",
		Params: []ParamInfo{
			{"align", "epoch", []string{"epoch", "go-zero", "first-grid"}, "epoch: windows [kW, (k+1)W) on the epoch; go-zero: windows [kW, (k+1)W) counted from Go's zero time, 0001-01-01 UTC, as time.Time.Truncate makes them; first-grid: a grid anchored at the user's first request, forgotten after a whole window with none (HAProxy's http_req_rate)"},
			{"count-denied", "false", []string{"false", "true"}, "denied requests are counted too"},
			{"admit", "below", []string{"below", "at-most"}, "below: allowed while the estimate is below N; at-most: allowed while the estimate including this request is at most N (estimate + 1 <= N)"},
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &slidingCounter{countDenied: p["count-denied"] == "true", align: p["align"], atMost: p["admit"] == "at-most", n: n, w: w.Milliseconds()}
		},
		GradesLimitChange: true,
		Candidates: func([]string) []string {
			return crossed([]string{"epoch", "go-zero", "first-grid"}, []string{"false", "true"}, []string{"below", "at-most"})
		},
		Alike: func(p map[string]string, _ int, _, oneGrid bool) string {
			p = maps.Clone(p)
			p["align"] = sameGrid(p["align"], oneGrid)
			return Variant{Name: ProfileSlidingCounter, Params: p}.String()
		},
		Suspects:        crossed([]string{"epoch", "first-grid", "go-zero"}, []string{"false", "true"}, []string{"below", "at-most"}),
		Remedy:          "a weighted estimate of the previous window lets more than N through when its requests came late in it: keep a log of the instants of allowed requests instead",
		RemainingVaries: true,
		Grid:            func(p map[string]string) (Grid, bool) { return alignedGrid(p["align"]) },
		Envelope:        slidingCounterEnvelope,
	}
}

// slidingCounterEnvelope bounds the weighted counter under load: its own
// bound within a window, and N per window of unknown alignment.
func slidingCounterEnvelope(p map[string]string, n int64, w time.Duration) Envelope {
	e := Envelope{Linear: []LinearBound{{Rate: n, Windows: n + 1, Less: 1, Within: 1,
		Rule: fmt.Sprintf("at most %d + ⌈%d×E/%v⌉ allowed within any span E < %v (the weighted counter's own bound)", n, n, w, w)}}}
	if _, e.Grid = alignedGrid(p["align"]); !e.Grid {
		e.Linear = append(e.Linear, LinearBound{Rate: n, Windows: 2 * n,
			Rule: fmt.Sprintf("at most 2×%d + %d×E/%v allowed within any span E (%d per window of unknown alignment)", n, n, w, n)})
	}
	counted := "allowed requests"
	if p["count-denied"] == "true" {
		counted = "requests counted (denied ones too)"
	}
	e.Under = UnderRule{Limit: n, LookbackWindows: 2, CountDenied: p["count-denied"] == "true",
		Rule: fmt.Sprintf("a denial needs %d %s in its window and the one before: within less than 2×%v before it", n, counted, w)}
	return e
}
