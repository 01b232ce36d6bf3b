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
//
// reading is how a change of W or N reads a user's counts
// ([slidingCounterReadings]): index (the default), rebase, finish or
// fresh.
//
// renewAny (renew=any) is what keeps a first-grid user's grid: by default
// only counted requests, so that a window with none forgets it; with
// renewAny every call that finds the user's counts rolls them to its
// instant and keeps the grid (a request allowed or refused, of cost 0 to
// N, or a query), and a request of cost 0 to N on a user with none
// anchors one (python limits' sliding window counter: every script shifts
// the windows, and SET 0 opens them). A request of cost above N is
// refused before anything is read.
type slidingCounter struct {
	countDenied bool
	align       string // epoch, go-zero, first-grid
	atMost      bool
	renewAny    bool
	reading     string
	n           int
	w           int64
	users       map[string]counterState
}

// counterState is a user's counts: cur counts the window [a+kw, a+(k+1)w)
// and prev the one before it. w is the window's length, the W in force
// when it opened; the reading index reads every window with the W in
// force instead.
type counterState struct {
	a         int64 // the grid's origin: 0 (the epoch), Go's zero time, the first-grid anchor, or a start kept across a change of W
	k         int64 // the window of cur
	w         int64
	prev, cur int64
}

// start is the start of the window of cur.
func (st counterState) start() int64 { return st.a + st.k*st.w }

// The readings of a change of configuration of the weighted counter.
const (
	counterIndex  = "index"
	counterRebase = "rebase"
	counterFinish = "finish"
	counterFresh  = "fresh"
)

// slidingCounterReadings are the honest readings of a change of N or W
// for a user with counts, the model's default first.
func slidingCounterReadings() []Reading {
	return []Reading{
		{Name: counterIndex, Doc: "the counts keep their window's index j on the origin: at t, k' = floor((t-a)/W'); k' = j keeps (prev, cur), k' = j+1 makes them (cur, 0), any other k' (0, 0); weights with W' and compared with N'",
			Seen: "none known (a {index, prev, cur} state read with the W in force)"},
		{Name: counterRebase, Doc: "the start s of the stored window is kept and the period is W': d = t-s; d < W' keeps (prev, cur) in [s, s+W'), W' <= d < 2W' makes (cur, 0) in [s+W', s+2W'), d >= 2W' is fresh; compared with N'",
			Seen: "HAProxy's freq_ctr (a stick table's http_req_rate carried over a reload by peers)"},
		{Name: counterFinish, Doc: "the stored window [s, E) keeps its end E = s+W and weights prev×(E-t)/W until E; then [E, E+W') holds (cur, 0), weighted by W', if reached before E+min(W, W') (the old state's expiry); later, fresh; compared with N'",
			Seen: "Symfony RateLimiter's SlidingWindow (createFromPreviousWindow with the new interval)"},
		{Name: counterFresh, Doc: "any change of N or W starts every user afresh (the key holds the rate)",
			Seen: "python limits"},
	}
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

// at is the user's counts rolled to the window holding t, with the length
// that window has (w).
func (s *slidingCounter) at(t int64, user string) counterState {
	st, _ := s.rolled(t, user)
	return st
}

// rolled is at, and whether the user's counts last to t (false: none, or
// forgotten by then, and st is fresh).
func (s *slidingCounter) rolled(t int64, user string) (counterState, bool) {
	st, ok := s.users[user]
	if ok && st.w != s.w && (s.reading == counterRebase || s.reading == counterFinish) {
		return s.reread(t, st)
	}
	if !ok {
		return s.fresh(t), false
	}
	a := st.a // the grid's origin, or a start kept by rebase
	if s.align == "first-grid" && (t < st.a || t >= st.a+(st.k+2)*s.w) {
		return s.fresh(t), false
	}
	k := floorDiv(t-a, s.w)
	switch {
	case k > st.k+1 || (k < st.k && s.align != "first-grid"):
		return s.fresh(t), false
	case k < st.k: // first-grid, the clock stepped back: a window of the anchor's grid
		return counterState{a: a, k: k, w: s.w}, true
	case k == st.k+1:
		return counterState{a: a, k: k, w: s.w, prev: st.cur}, true
	}
	st.w = s.w
	return st, true
}

// fresh is a user with no counts at t: in the grid's window holding t, or
// first-grid, a new grid anchored at t.
func (s *slidingCounter) fresh(t int64) counterState {
	if s.align == "first-grid" {
		return counterState{a: t, w: s.w}
	}
	a := gridOrigin(s.align)
	return counterState{a: a, k: floorDiv(t-a, s.w), w: s.w}
}

// reread reads at t, under the readings rebase and finish, the counts of a
// user whose window [start, start+st.w) opened under another W.
func (s *slidingCounter) reread(t int64, st counterState) (counterState, bool) {
	start := st.start()
	end := start + st.w
	switch {
	case t < start: // the clock stepped back
		return s.fresh(t), false
	case s.reading == counterRebase && t < start+s.w:
		return counterState{a: start, w: s.w, prev: st.prev, cur: st.cur}, true
	case s.reading == counterRebase && t < start+2*s.w:
		return counterState{a: start, k: 1, w: s.w, prev: st.cur}, true
	case s.reading == counterRebase:
		return s.fresh(t), false
	case t < end: // finish: the window keeps its end and its length
		return st, true
	case t < end+min(st.w, s.w):
		return counterState{a: end, w: s.w, prev: st.cur}, true
	}
	return s.fresh(t), false
}

// room is N*L - prev*(L-e) - cur*L, less L-1 with atMost, for st's window
// of L = st.w: positive when a request is allowed, and ceil(room/L)
// requests are.
func (s *slidingCounter) room(t int64, st counterState) *big.Int {
	l := st.w
	e := t - st.start()
	r := new(big.Int).Mul(big.NewInt(int64(s.n)), big.NewInt(l))
	r.Sub(r, new(big.Int).Mul(big.NewInt(st.prev), big.NewInt(l-e)))
	r.Sub(r, new(big.Int).Mul(big.NewInt(st.cur), big.NewInt(l)))
	return r.Sub(r, big.NewInt(s.slack(l)))
}

// slack is what the room of a window of l gives up so that "positive"
// means allowed: with atMost, prev*(l-e) + (cur+1)*l <= N*l is N*l -
// prev*(l-e) - cur*l - (l-1) > 0.
func (s *slidingCounter) slack(l int64) int64 {
	if s.atMost {
		return l - 1
	}
	return 0
}

// Allow implements [Profile].
func (s *slidingCounter) Allow(now time.Time, user string) (bool, error) {
	return s.AllowN(now, user, 1)
}

// AllowN implements [Weighted]: allowed when est(t) + n - 1 < N (admit=
// below) or est(t) + n <= N (at-most), that is when room - (n-1)*L > 0,
// and then cur += n; refused, cur += n only with countDenied. Cost 0 is
// allowed and changes nothing.
func (s *slidingCounter) AllowN(now time.Time, user string, n int) (bool, error) {
	if err := validateRequest(user, n); err != nil {
		return false, err
	}
	t := now.UnixMilli()
	if n == 0 {
		if s.renewAny {
			s.save(user, s.at(t, user))
		}
		return true, nil
	}
	st := s.at(t, user)
	// room - (n-1)*L > 0: the n-th request in a row at t is allowed.
	room := s.room(t, st)
	room.Sub(room, new(big.Int).Mul(big.NewInt(int64(n-1)), big.NewInt(st.w)))
	ok := room.Sign() > 0
	if ok || s.countDenied {
		st.cur += int64(n)
		s.save(user, st)
	} else if s.renewAny && n <= s.n {
		s.save(user, st)
	}
	return ok, nil
}

// save stores user's counts.
func (s *slidingCounter) save(user string, st counterState) {
	if s.users == nil {
		s.users = map[string]counterState{}
	}
	s.users[user] = st
}

// Remaining implements [Profile].
func (s *slidingCounter) Remaining(now time.Time, user string) (int, error) {
	if err := contract.ValidateUserID(user); err != nil {
		return 0, err
	}
	t := now.UnixMilli()
	st, kept := s.rolled(t, user)
	if s.renewAny {
		// A query rolls the counts while they last, forgets them once
		// they lapsed, and opens no grid.
		if kept {
			s.users[user] = st
		} else {
			delete(s.users, user)
		}
	}
	r := s.room(t, st)
	if r.Sign() <= 0 {
		return 0, nil
	}
	// ceil(room / L) more requests fit.
	w := big.NewInt(st.w)
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
	start := st.start()
	when := start + st.w // in the next window, of the W in force, cur is weighted by W-e
	if e, ok := s.firstRoom(st.prev, st.cur, st.w); ok && start+e > t {
		when = start + e
	} else {
		e, _ := s.firstRoom(st.cur, 0, s.w)
		when += e
	}
	if old, ok := s.users[user]; ok && old.w != s.w && s.reading == counterFinish {
		// finish: a window of another length is forgotten min(its length,
		// W) after its end, unless a request saved the next one.
		when = min(when, old.start()+old.w+min(old.w, s.w))
	}
	return ms(when - t)
}

// firstRoom is the first e in [0, l) at which prev*(l-e) < (N-cur)*l -
// slack (the room of a window of l is positive), when there is one.
func (s *slidingCounter) firstRoom(prev, cur, l int64) (int64, bool) {
	num := new(big.Int).Mul(big.NewInt(int64(s.n)-cur), big.NewInt(l))
	num.Sub(num, big.NewInt(s.slack(l)))
	if num.Sign() <= 0 {
		return 0, false
	}
	if prev == 0 {
		return 0, true
	}
	// e > l - num/prev: e = l - floor(that), one more on exact division.
	q, m := new(big.Int).QuoRem(num, big.NewInt(prev), new(big.Int))
	if q.Cmp(big.NewInt(l)) > 0 {
		return 0, true
	}
	e := l - q.Int64()
	if m.Sign() == 0 {
		e++
	}
	return max(0, e), e < l
}

// Lifetime implements [Profile]: a count matters until the end of the
// window after its own (index: by the W in force, its index kept; rebase:
// 2W from its start; finish: min(its own length, W) after its end).
func (s *slidingCounter) Lifetime(now time.Time, user string) time.Duration {
	st, ok := s.users[user]
	if !ok {
		return 0
	}
	end := st.a + (st.k+2)*s.w
	switch s.reading {
	case counterRebase:
		end = st.start() + 2*s.w
	case counterFinish:
		end = st.start() + st.w + min(st.w, s.w)
	}
	return ms(max(0, end-now.UnixMilli()))
}

// Reset implements [Profile].
func (s *slidingCounter) Reset(user string) error {
	if err := contract.ValidateUserID(user); err != nil {
		return err
	}
	delete(s.users, user)
	return nil
}

// Configure implements [Profile]: as the model's reading says. index:
// counts are kept, windows laid out anew from the origin; rebase and
// finish: counts are kept with their window's start or end (a user
// already as fresh at now is forgotten: its store would have let it
// expire); fresh: any change forgets every user.
func (s *slidingCounter) Configure(now time.Time, n int, w time.Duration) error {
	if err := contract.ValidateConfig(n, w); err != nil {
		return err
	}
	nw := w.Milliseconds()
	if n == s.n && nw == s.w {
		return nil
	}
	switch {
	case s.reading == counterFresh:
		s.users = nil
	case nw != s.w && (s.reading == counterRebase || s.reading == counterFinish):
		for u := range s.users {
			if s.Lifetime(now, u) <= 0 {
				delete(s.users, u)
			}
		}
	}
	s.n, s.w = n, nw
	return nil
}

// Explain implements [Profile].
func (s *slidingCounter) Explain(now, base time.Time, user string) string {
	t := now.UnixMilli()
	st := s.at(t, user)
	start := st.start()
	e := t - start
	with, kept := "", ""
	if s.atMost {
		with = " + 1 (this request)"
	}
	if st.w != s.w {
		kept = fmt.Sprintf(" (opened under a window of %v, it keeps its end)", ms(st.w))
	}
	return fmt.Sprintf("the window [%s, %s)%s of %s has counted %d and the one before %d: the estimate is %d×(%d-%d)/%d + %d%s, limit %d",
		offset(time.UnixMilli(start), base), offset(time.UnixMilli(start+st.w), base), kept, user, st.cur, st.prev, st.prev, st.w, e, st.w, st.cur, with, s.n)
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
	if s.reading == counterRebase || s.reading == counterFinish { // the window's own length places it
		return fmt.Sprintf("%d/%d/%d/%d/%d", st.a, st.k, st.w, st.prev, st.cur)
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
			{"count-denied", "false", []string{"false", "true"}, "false: only allowed requests are counted; true: denied requests are counted too"},
			{"admit", "below", []string{"below", "at-most"}, "below: allowed while the estimate is below N; at-most: allowed while the estimate including this request is at most N (estimate + 1 <= N)"},
			{RenewParam, RenewCounted, []string{RenewCounted, RenewAny}, "what keeps a first-grid user's grid (other grids are fixed): counted: a counted request, so that a window with none forgets it (HAProxy); any: any call that finds the user's counts, a request allowed or refused, of cost 0, or a query, rolls them on, and a request of cost 0 anchors a grid as one of cost 1 would (python limits' sliding window counter: each of its scripts shifts the windows)"},
		},
		New: func(p map[string]string, n int, w time.Duration) Replayable {
			return &slidingCounter{countDenied: p["count-denied"] == "true", align: p["align"], atMost: p["admit"] == "at-most",
				renewAny: p[RenewParam] == RenewAny, reading: pinnedReading(p, counterIndex), n: n, w: w.Milliseconds()}
		},
		Cost:              "with est(t) = prev×(W-e)/W + cur, admit=below allows when est(t) + n - 1 < N, admit=at-most when est(t) + n <= N (exactly: prev×(W-e) + (cur+n-1)×W < N×W, and prev×(W-e) + (cur+n)×W <= N×W: allowed exactly when n requests in a row at t would all be), then cur += n; refused, nothing is counted, but with count-denied=true cur += n; n > N is never allowed; renew=any: n = 0 saves the state as a request does, rolled to t (a user with none gets a grid at t), and is not graded, and a refused request of n <= N rolls the state to t; " + costShared,
		GradesLimitChange: true,
		Readings:          slidingCounterReadings(),
		Candidates: func([]string) []string {
			list := crossed([]string{"epoch", "go-zero", "first-grid"}, []string{"false", "true"}, []string{"below", "at-most"})
			for _, c := range crossed([]string{"first-grid"}, []string{"false", "true"}, []string{"below", "at-most"}) {
				list = append(list, c+","+RenewParam+"="+RenewAny)
			}
			return list
		},
		Alike: func(p map[string]string, _ int, queries, oneGrid bool) string {
			p = maps.Clone(p)
			p["align"] = sameGrid(p["align"], oneGrid)
			delete(p, ReconfigureParam) // the readings differ only after a change
			if !queries && p["count-denied"] == "true" {
				// Every request then counts: what else keeps the grid
				// under renew=any is a query, or a request of cost 0,
				// which either may save (TimedOp.Free).
				delete(p, RenewParam)
			}
			return Variant{Name: ProfileSlidingCounter, Params: p}.String()
		},
		Suspects:        crossed([]string{"epoch", "first-grid", "go-zero"}, []string{"false", "true"}, []string{"below", "at-most"}),
		Remedy:          "a weighted estimate of the previous window lets more than N through when its requests came late in it: keep a log of the instants of allowed requests instead",
		RemainingVaries: true,
		Grid:            func(p map[string]string) (Grid, bool) { return alignedGrid(p["align"]) },
		Anchored:        func(p map[string]string) bool { return p["align"] == "first-grid" },
		Envelope:        slidingCounterEnvelope,
		QueryWrites:     func(p map[string]string) bool { return p[RenewParam] == RenewAny },
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
